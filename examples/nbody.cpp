// N-body with qd::vec3f: softened gravity, leapfrog steps, and the total energy as a
// kernel reduction. Each step is checked against the same step in plain C++.
//   ./nbody [bodies] [steps]      (QD_ARCH=cpu|cuda|amdgpu|reference picks the backend)
#include <quadrants/quadrants.hpp>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using host_vec = std::array<float, 3>;

// The kick: each body's velocity from the forces of all others. `vel[i] += ...` is a
// plain update: each iteration owns vel[i] (docs/dsl.md, "Atomic demotion").
auto kick = qd::kernel("kick", {"pos", "vel", "mass", "dt", "eps"},
                       [](qd::types::ndarray<qd::vec3f, 1> pos, qd::types::ndarray<qd::vec3f, 1> vel,
                          qd::types::ndarray<float, 1> mass, qd::f32 dt, qd::f32 eps) {
                         qd::range_for(pos.shape(0), [&](qd::i32 i) {
                           qd::vec3f pi = pos[i];
                           qd::var<qd::vec3f> acc = qd::vec3f(0.0f);
                           qd::range_for(pos.shape(0), [&](qd::i32 j) {
                             qd::vec3f d = pos[j] - pi;
                             qd::f32 r2 = qd::dot(d, d) + eps;
                             acc += d * (mass[j] / (r2 * qd::sqrt(r2)));
                           });
                           vel[i] += acc * dt;
                         });
                       });

auto drift = qd::kernel("drift", {"pos", "vel", "dt"},
                        [](qd::types::ndarray<qd::vec3f, 1> pos, qd::types::ndarray<qd::vec3f, 1> vel, qd::f32 dt) {
                          qd::range_for(pos.shape(0), [&](qd::i32 i) { pos[i] += vel[i] * dt; });
                        });

// Kinetic energy, reduced into a top-level variable and stored in out[0].
auto kinetic = qd::kernel(
    "kinetic", {"vel", "mass", "out"},
    [](qd::types::ndarray<qd::vec3f, 1> vel, qd::types::ndarray<float, 1> mass, qd::types::ndarray<float, 1> out) {
      qd::var<float> total = 0.0f;
      qd::range_for(vel.shape(0), [&](qd::i32 i) { total += 0.5f * mass[i] * qd::norm_sqr(vel[i]); });
      out[0] = total;
    });

// The same step in plain C++.
void host_step(std::vector<host_vec>& pos, std::vector<host_vec>& vel, const std::vector<float>& mass, float dt,
               float eps) {
  const std::size_t n = pos.size();
  for (std::size_t i = 0; i < n; ++i) {
    host_vec acc{0, 0, 0};
    for (std::size_t j = 0; j < n; ++j) {
      host_vec d{pos[j][0] - pos[i][0], pos[j][1] - pos[i][1], pos[j][2] - pos[i][2]};
      float r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps;
      float s = mass[j] / (r2 * std::sqrt(r2));
      for (int c = 0; c < 3; ++c) acc[c] += d[c] * s;
    }
    for (int c = 0; c < 3; ++c) vel[i][c] += acc[c] * dt;
  }
  for (std::size_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) pos[i][c] += vel[i][c] * dt;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 512;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  qd::init();  // arch from QD_ARCH, else the CPU
  std::vector<host_vec> hp(static_cast<std::size_t>(n)), hv(static_cast<std::size_t>(n));
  std::vector<float> hm(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {  // a rotating disc
    const float a = 6.2831853f * static_cast<float>(i) / static_cast<float>(n);
    const float r = 1.0f + 0.5f * static_cast<float>(i % 7) / 7.0f;
    hp[static_cast<std::size_t>(i)] = {r * std::cos(a), r * std::sin(a), 0.05f * std::sin(3 * a)};
    hv[static_cast<std::size_t>(i)] = {-0.3f * std::sin(a), 0.3f * std::cos(a), 0.0f};
    hm[static_cast<std::size_t>(i)] = 1.0f / static_cast<float>(n);
  }
  qd::ndarray<qd::vec3f, 1> pos(n), vel(n);
  qd::ndarray<float, 1> mass(n), energy(1);
  pos.from_host(hp);
  vel.from_host(hv);
  mass.from_host(hm);
  const float dt = 0.001f, eps = 0.01f;

  auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    kick(pos, vel, mass, dt, eps);
    drift(pos, vel, dt);
  }
  kinetic(vel, mass, energy);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  for (int s = 0; s < steps; ++s) host_step(hp, hv, hm, dt, eps);
  double host_energy = 0;
  for (int i = 0; i < n; ++i) {
    const host_vec& v = hv[static_cast<std::size_t>(i)];
    host_energy += 0.5 * hm[static_cast<std::size_t>(i)] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  }
  auto got = pos.to_host();
  double worst = 0;
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c)
      worst =
          std::max(worst, static_cast<double>(std::abs(got[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)] -
                                                       hp[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)])));
  const double e = energy.to_host()[0];
  std::printf("%d bodies, %d steps on %s: %.1f ms (first call includes compiling)\n", n, steps,
              std::string(qd::name(qd::current_settings().arch)).c_str(), ms);
  std::printf("kinetic energy %.6f (plain C++ %.6f); largest position difference %.2e\n", e, host_energy, worst);
  const bool ok = worst < 1e-4 && std::abs(e - host_energy) <= 1e-4 * std::abs(host_energy);
  std::printf("%s\n", ok ? "agrees with plain C++" : "MISMATCH with plain C++");
  qd::reset();
  return ok ? 0 : 1;
}
