// A user translation unit with five kernels using vectors and matrices, for the
// compile-time figure in docs/benchmarks.md (issue 11: <= 2 s, separate compilation).
#include <quadrants/quadrants.hpp>

using vec_array = qd::types::ndarray<qd::vec3f, 1>;

auto kick = qd::kernel("kick", [](vec_array pos, vec_array vel, qd::types::ndarray<float, 1> mass, qd::f32 dt) {
  qd::range_for(pos.shape(0), [&](qd::i32 i) {
    qd::var<qd::vec3f> acc = qd::vec3f(0.0f);
    qd::range_for(pos.shape(0), [&](qd::i32 j) {
      qd::vec3f d = pos[j] - pos[i];
      qd::f32 r2 = qd::dot(d, d) + 0.01f;
      acc += d * (mass[j] / (r2 * qd::sqrt(r2)));
    });
    vel[i] += acc * dt;
  });
});
auto drift = qd::kernel("drift", [](vec_array pos, vec_array vel, qd::f32 dt) {
  qd::range_for(pos.shape(0), [&](qd::i32 i) { pos[i] += vel[i] * dt; });
});
auto rotate = qd::kernel("rotate", [](vec_array pos, qd::types::ndarray<qd::mat3f, 1> rot, qd::mat3f global) {
  qd::range_for(pos.shape(0), [&](qd::i32 i) { pos[i] = global * (rot[i] * pos[i]); });
});
auto springs = qd::kernel(
    "springs", [](vec_array pos, vec_array force, qd::types::ndarray<qd::vec2i, 1> edges, qd::f32 k, qd::f32 rest) {
      qd::range_for(edges.shape(0), [&](qd::i32 e) {
        qd::vec2i ab = edges[e];
        qd::vec3f d = pos[ab.y()] - pos[ab.x()];
        qd::f32 len = qd::norm(d);
        qd::vec3f f = qd::normalize(d) * (k * (len - rest));
        force[ab.x()] += f;  // scatter: atomic
        force[ab.y()] -= f;
      });
    });
auto inertia =
    qd::kernel("inertia", [](vec_array pos, qd::types::ndarray<float, 1> mass, qd::types::ndarray<qd::mat3f, 1> out) {
      qd::var<qd::mat3f> total = qd::mat3f::zero();
      qd::range_for(pos.shape(0), [&](qd::i32 i) {
        qd::vec3f r = pos[i];
        total += (qd::mat3f::identity() * qd::dot(r, r) - qd::outer(r, r)) * mass[i];
      });
      out[0] = qd::inverse(total);
    });
