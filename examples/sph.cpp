// SPH fluid in a box: the neighbours of each particle from a qd::hash_grid, the pressure
// gradient corrected per particle with qd::solve (renormalised SPH gradients), the time
// step from the fastest particle (qd::algorithms::reduce_max) and the kinetic energy from
// qd::algorithms::reduce. Each step is checked against the same step in plain C++.
//   ./sph [particles] [steps]      (QD_ARCH=cpu|cuda|amdgpu|reference picks the backend)
#include <quadrants/algorithms.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using host_vec = std::array<float, 3>;

constexpr float spacing = 0.05f;  // initial distance between particles
constexpr float h = 2 * spacing;  // smoothing length: the neighbour radius
constexpr float rest_density = 1000.0f;
constexpr float mass = rest_density * spacing * spacing * spacing;
constexpr float stiffness = 50.0f;
constexpr float viscosity = 0.02f;
constexpr float pi = 3.14159265f;
constexpr float poly6 = 315.0f / (64.0f * pi * h * h * h * h * h * h * h * h * h);
constexpr float spiky = -45.0f / (pi * h * h * h * h * h * h);
constexpr float laplacian = 45.0f / (pi * h * h * h * h * h * h);

// Density and pressure of each particle from its neighbours (poly6 kernel).
auto density = qd::kernel("density", {"grid", "pos", "rho", "p"},
                          [](qd::types::hash_grid grid, qd::types::ndarray<qd::vec3f, 1> pos,
                             qd::types::ndarray<float, 1> rho, qd::types::ndarray<float, 1> p) {
                            qd::range_for(pos.shape(0), [&](qd::i32 i) {
                              const qd::vec3f xi = pos[i];
                              qd::var<float> sum = 0.0f;
                              qd::for_each_neighbor(grid, xi, h, [&](qd::i32 j) {
                                const qd::f32 q = h * h - qd::norm_sqr(pos[j] - xi);
                                sum += mass * poly6 * q * q * q;
                              });
                              rho[i] = sum;
                              p[i] = stiffness * qd::max(sum - rest_density, 0.0f);
                            });
                          });

// Accelerations: the pressure gradient sum_j V_j (p_j - p_i) grad W_ij, corrected by
// the inverse of L_i = sum_j V_j grad W_ij (x_j - x_i)^T (the identity for a full
// neighbourhood) where L_i is well conditioned; viscosity; gravity.
auto forces = qd::kernel(
    "forces", {"grid", "pos", "vel", "rho", "p", "acc"},
    [](qd::types::hash_grid grid, qd::types::ndarray<qd::vec3f, 1> pos, qd::types::ndarray<qd::vec3f, 1> vel,
       qd::types::ndarray<float, 1> rho, qd::types::ndarray<float, 1> p, qd::types::ndarray<qd::vec3f, 1> acc) {
      qd::range_for(pos.shape(0), [&](qd::i32 i) {
        const qd::vec3f xi = pos[i], vi = vel[i];
        const qd::f32 pi_ = p[i];
        qd::var<qd::mat3f> l = qd::mat3f::zero();
        qd::var<qd::vec3f> grad = qd::vec3f(0.0f), visc = qd::vec3f(0.0f);
        qd::for_each_neighbor(grid, xi, h, [&](qd::i32 j) {
          const qd::vec3f d = pos[j] - xi;
          const qd::f32 r = qd::sqrt(qd::norm_sqr(d));
          qd::if_(r > 1e-6f, [&] {
            const qd::vec3f w = d * (spiky * (h - r) * (h - r) / r);  // the gradient of W at x_i
            const qd::f32 volume = mass / rho[j];
            l += qd::outer(w, d) * -volume;
            grad += w * ((p[j] - pi_) * -volume);
            visc += (vel[j] - vi) * (volume * laplacian * (h - r));
          });
        });
        const qd::mat3f lm = l;
        const qd::vec3f g = grad;
        const qd::vec3f solved = qd::solve(lm, g);
        const qd::boolean usable = qd::determinant(lm) > 0.25f;
        const qd::vec3f gp(qd::select(usable, solved.x(), g.x()), qd::select(usable, solved.y(), g.y()),
                           qd::select(usable, solved.z(), g.z()));
        acc[i] = gp * (-1.0f / rho[i]) + qd::vec3f(visc) * viscosity + qd::vec3f(0.0f, 0.0f, -9.81f);
      });
    });

// Velocity and position; the walls of the unit box reflect with damping.
auto integrate = qd::kernel("integrate", {"pos", "vel", "acc", "speed2", "dt"},
                            [](qd::types::ndarray<qd::vec3f, 1> pos, qd::types::ndarray<qd::vec3f, 1> vel,
                               qd::types::ndarray<qd::vec3f, 1> acc, qd::types::ndarray<float, 1> speed2, qd::f32 dt) {
                              qd::range_for(pos.shape(0), [&](qd::i32 i) {
                                const qd::vec3f v = vel[i] + acc[i] * dt;
                                const qd::vec3f x = pos[i] + v * dt;
                                qd::var<qd::vec3f> nv = v;
                                for (int c = 0; c < 3; ++c)
                                  qd::if_(x[c] < 0.0f || x[c] > 1.0f, [&] { nv[c] = v[c] * -0.5f; });
                                pos[i] = qd::min(qd::max(x, qd::vec3f(0.0f)), qd::vec3f(1.0f));
                                vel[i] = nv;
                                speed2[i] = qd::norm_sqr(qd::vec3f(nv));
                              });
                            });

auto kinetic_energy =
    qd::kernel("kinetic", {"speed2", "e"}, [](qd::types::ndarray<float, 1> speed2, qd::types::ndarray<float, 1> e) {
      qd::range_for(speed2.shape(0), [&](qd::i32 i) { e[i] = 0.5f * mass * speed2[i]; });
    });

// ---- the same step in plain C++ (brute-force neighbours) ----------------------------------

struct host_state {
  std::vector<host_vec> pos, vel;
};

float norm2(const host_vec& a) { return a[0] * a[0] + a[1] * a[1] + a[2] * a[2]; }
host_vec minus(const host_vec& a, const host_vec& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }

// x with A x = b by Gaussian elimination with partial pivoting.
host_vec solve3(std::array<host_vec, 3> a, host_vec b) {
  for (int k = 0; k < 3; ++k) {
    int best = k;
    for (int i = k + 1; i < 3; ++i)
      if (std::abs(a[i][k]) > std::abs(a[best][k])) best = i;
    std::swap(a[k], a[best]);
    std::swap(b[k], b[best]);
    for (int i = k + 1; i < 3; ++i) {
      const float f = a[i][k] / a[k][k];
      for (int j = k + 1; j < 3; ++j) a[i][j] -= f * a[k][j];
      b[i] -= f * b[k];
    }
  }
  host_vec x{};
  for (int i = 2; i >= 0; --i) {
    float s = b[i];
    for (int j = i + 1; j < 3; ++j) s -= a[i][j] * x[j];
    x[i] = s / a[i][i];
  }
  return x;
}

float host_step(host_state& s, float dt_max) {
  const std::size_t n = s.pos.size();
  std::vector<float> rho(n), p(n), speed2(n);
  for (std::size_t i = 0; i < n; ++i) {
    float sum = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const float d2 = norm2(minus(s.pos[j], s.pos[i]));
      if (d2 <= h * h) sum += mass * poly6 * (h * h - d2) * (h * h - d2) * (h * h - d2);
    }
    rho[i] = sum;
    p[i] = stiffness * std::max(sum - rest_density, 0.0f);
  }
  std::vector<host_vec> acc(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::array<host_vec, 3> l{};
    host_vec grad{}, visc{};
    for (std::size_t j = 0; j < n; ++j) {
      const host_vec d = minus(s.pos[j], s.pos[i]);
      if (norm2(d) > h * h) continue;
      const float r = std::sqrt(norm2(d));
      if (!(r > 1e-6f)) continue;
      const float volume = mass / rho[j];
      for (int a = 0; a < 3; ++a) {
        const float w = d[a] * (spiky * (h - r) * (h - r) / r);
        for (int b = 0; b < 3; ++b) l[a][b] += w * d[b] * -volume;
        grad[a] += w * ((p[j] - p[i]) * -volume);
        visc[a] += (s.vel[j][a] - s.vel[i][a]) * (volume * laplacian * (h - r));
      }
    }
    const float det = l[0][0] * (l[1][1] * l[2][2] - l[1][2] * l[2][1]) -
                      l[0][1] * (l[1][0] * l[2][2] - l[1][2] * l[2][0]) +
                      l[0][2] * (l[1][0] * l[2][1] - l[1][1] * l[2][0]);
    const host_vec gp = det > 0.25f ? solve3(l, grad) : grad;
    for (int a = 0; a < 3; ++a) acc[i][a] = gp[a] * (-1.0f / rho[i]) + visc[a] * viscosity + (a == 2 ? -9.81f : 0.0f);
  }
  float fastest = 0;
  for (std::size_t i = 0; i < n; ++i) fastest = std::max(fastest, norm2(s.vel[i]));
  const float dt = std::min(dt_max, 0.25f * h / std::max(std::sqrt(fastest), 1e-3f));
  for (std::size_t i = 0; i < n; ++i) {
    host_vec v{}, x{};
    for (int a = 0; a < 3; ++a) v[a] = s.vel[i][a] + acc[i][a] * dt, x[a] = s.pos[i][a] + v[a] * dt;
    for (int a = 0; a < 3; ++a) {
      if (x[a] < 0.0f || x[a] > 1.0f) v[a] = v[a] * -0.5f;
      x[a] = std::min(std::max(x[a], 0.0f), 1.0f);
    }
    s.pos[i] = x;
    s.vel[i] = v;
  }
  return dt;
}

}  // namespace

int main(int argc, char** argv) {
  const int side = argc > 1 ? std::max(2, static_cast<int>(std::cbrt(std::atoi(argv[1])))) : 12;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  qd::init();  // arch from QD_ARCH, else the CPU
  // A block of fluid in a corner of the box, slightly jittered.
  host_state hs;
  for (int z = 0; z < side; ++z)
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x) {
        const float j = 0.001f * static_cast<float>((x * 7 + y * 13 + z * 29) % 11);
        hs.pos.push_back({0.05f + spacing * static_cast<float>(x) + j, 0.05f + spacing * static_cast<float>(y),
                          0.05f + spacing * static_cast<float>(z) + j});
        hs.vel.push_back({0.0f, 0.0f, 0.0f});
      }
  const auto n = static_cast<std::int64_t>(hs.pos.size());
  qd::ndarray<qd::vec3f, 1> pos(n), vel(n), acc(n);
  qd::ndarray<float, 1> rho(n), p(n), speed2(n), energy(n);
  pos.from_host(hs.pos);
  vel.from_host(hs.vel);
  qd::hash_grid grid(h);
  const float dt_max = 0.002f;

  const auto t0 = std::chrono::steady_clock::now();
  double time = 0;
  for (int s = 0; s < steps; ++s) {
    grid.build(pos);
    density(grid, pos, rho, p);
    forces(grid, pos, vel, rho, p, acc);
    const float fastest = s == 0 ? 0.0f : qd::algorithms::reduce_max(speed2);
    const float dt = std::min(dt_max, 0.25f * h / std::max(std::sqrt(fastest), 1e-3f));
    integrate(pos, vel, acc, speed2, dt);
    time += dt;
  }
  kinetic_energy(speed2, energy);
  const float e = qd::algorithms::reduce(energy);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  double host_time = 0;
  for (int s = 0; s < steps; ++s) host_time += host_step(hs, dt_max);
  double host_e = 0;
  for (const auto& v : hs.vel) host_e += 0.5 * mass * norm2(v);
  const auto got = pos.to_host();
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    for (int a = 0; a < 3; ++a) worst = std::max(worst, static_cast<double>(std::abs(got[i][a] - hs.pos[i][a])));
  std::printf("%lld particles, %d steps (%.4f s simulated) on %s: %.1f ms (first call includes compiling)\n",
              static_cast<long long>(n), steps, time, std::string(qd::name(qd::current_settings().arch)).c_str(), ms);
  std::printf("kinetic energy %.6g (plain C++ %.6g); largest position difference %.2e\n", e, host_e, worst);
  const bool ok = worst < 1e-4 && std::abs(e - host_e) <= 1e-3 * host_e + 1e-9 && std::abs(time - host_time) < 1e-9;
  std::printf("%s\n", ok ? "agrees with plain C++" : "MISMATCH with plain C++");
  qd::reset();
  return ok ? 0 : 1;
}
