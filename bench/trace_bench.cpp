// Trace time (issue 14: source locations cost at most 5 % of it): the median time to
// trace a kernel of 64 constructs of about 30 operations each (bench_support.hpp), run
// the dead-code pass and analyse its structure, as every kernel's first use does.
// Built against two checkouts' include/ side by side, it compares them.
#include <cstdio>

#include "bench_support.hpp"
#include "quadrants/runtime/kernel_state.hpp"

namespace {

template <class F>
double trace_ms(F body) {
  return qd_bench::ms([&] {
    auto k = qd::detail::make_kernel_state("traced", {}, qd::detail::parameter_descs<F>(),
                                           [body](qd::detail::tracer& t) { qd::detail::trace_kernel(body, t); });
    qd::detail::ensure_traced(*k);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  const int constructs = 64;
  auto body = [=](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> c,
                  qd::types::ndarray<float, 1> out) {
    for (int k = 0; k < constructs; ++k) qd_bench::construct(a, b, c, out, k);
  };
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) times.push_back(trace_ms(body));
  std::printf("trace of a %d-construct kernel: median %.3f ms over %d rounds\n", constructs, qd_bench::median(times),
              rounds);
  return 0;
}
