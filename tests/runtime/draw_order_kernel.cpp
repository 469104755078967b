// The kernel runtime/draw_order compiles twice, with g++ and with clang++ (which evaluate
// a call's arguments in opposite orders), each into its own namespace.
#include <cstdint>
#include <vector>

#include <quadrants/quadrants.hpp>

namespace qd_test::QD_DRAW_ORDER_NAMESPACE {

// 1 when this compiler evaluated the first argument of a call first, else 0.
int first_argument_first() {
  int next = 0;
  auto take = [&] { return next++; };
  auto first = [](int a, int) { return a; };
  return first(take(), take()) == 0 ? 1 : 0;
}

// Draws of vector constructors, whose arguments C++ evaluates in an unspecified order.
std::vector<float> draws() {
  auto k = qd::kernel("draw_order", [](qd::types::ndarray<float, 2> out) {
    qd::range_for(out.shape(0), [&](qd::i32 i) {
      qd::vec2f v(qd::random<float>(), qd::random<float>());
      qd::vec3f w(qd::random<float>() * 2.0f - 1.0f, qd::random<float>(), qd::random<float>() + v.x());
      out(i, 0) = v.x(), out(i, 1) = v.y();
      out(i, 2) = w.x(), out(i, 3) = w.y(), out(i, 4) = w.z();
    });
  });
  qd::ndarray<float, 2> out({16, 5});
  k(out);
  return out.to_host();
}

// Two draws written at one place (a helper called twice in one expression): the one case
// the compiler's order still decides, since the two cannot be told apart by where they are.
std::vector<float> helper_draws() {
  auto k = qd::kernel("helper_draws", [](qd::types::ndarray<float, 2> out) {
    auto draw = [] { return qd::random<float>(); };
    qd::range_for(out.shape(0), [&](qd::i32 i) {
      qd::vec2f v(draw(), draw());
      out(i, 0) = v.x(), out(i, 1) = v.y();
    });
  });
  qd::ndarray<float, 2> out({16, 2});
  k(out);
  return out.to_host();
}

}  // namespace qd_test::QD_DRAW_ORDER_NAMESPACE
