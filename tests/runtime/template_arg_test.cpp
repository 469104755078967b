// Kernels specialised per value (SPEC §13.5): a qd::types::template_arg is a C++ value
// while tracing; each distinct value is traced, split and cached once, as its own
// variant, and a value seen before traces nothing.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"
#include "support/fresh_dir.hpp"

using doctest::Contains;

namespace {

enum class smoothing : std::uint8_t { none, box };

}  // namespace

TEST_CASE("each template value traces its own variant once; a value seen before traces nothing") {
  for (qd::arch a : {qd::arch::cpu, qd::arch::reference}) {
    CAPTURE(a);
    qd::init({.arch = a, .per_offload = qd::per_offload_mode::on});
    int traces = 0;  // the lambda runs once per traced variant
    auto k =
        qd::kernel("substeps", {"n_sub", "x"}, [&](qd::types::template_arg<int> n_sub, qd::types::ndarray<float, 1> x) {
          ++traces;
          for (int s = 0; s < n_sub; ++s) qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] += 1.0f; });
        });
    CHECK_THROWS_WITH_AS(k.ir(), Contains("kernel 'substeps' has template arguments"), qd::user_error);
    qd::ndarray<float, 1> x(16);
    k(4, x);
    if (a == qd::arch::cpu) CHECK(k.per_offload_cache_observations().frontend_constructs_total == 4);
    k(8, x);
    if (a == qd::arch::cpu) CHECK(k.per_offload_cache_observations().frontend_constructs_total == 8);
    k(4, x);
    CHECK(traces == 2);
    CHECK(x.to_host() == std::vector<float>(16, 16.0f));
    CHECK(k.name() == "substeps");
    k.compile(2);  // compiles a third variant without launching
    CHECK(traces == 3);
    k(2, x);
    CHECK(traces == 3);
    CHECK(x.to_host() == std::vector<float>(16, 18.0f));
    qd::reset();
  }
}

TEST_CASE("a template value is a C++ number in expressions, bounds and indices; bool, enum and float values") {
  qd_test::init_cpu();
  auto k = qd::kernel("specialised", {"scale", "mode", "flip", "first", "x", "out"},
                      [](qd::types::template_arg<float> scale, qd::types::template_arg<smoothing> mode,
                         qd::types::template_arg<bool> flip, qd::types::template_arg<std::int64_t> first,
                         qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
                        qd::range_for(first, x.shape(0), [&](qd::i32 i) {
                          qd::f32 v = x[i] * scale;                                       // f32: the value is a literal
                          if (mode == smoothing::box) v = (v + x[first] * scale) * 0.5f;  // decided while tracing
                          out[i] = flip ? -v : v;
                        });
                      });
  qd::ndarray<float, 1> x(6), out(6);
  x.from_host(std::vector<float>{1, 2, 3, 4, 5, 6});
  k(2.0f, smoothing::none, false, std::int64_t{0}, x, out);
  CHECK(out.to_host() == std::vector<float>{2, 4, 6, 8, 10, 12});
  k(0.5f, smoothing::box, true, std::int64_t{2}, x, out);
  CHECK(out.to_host() == std::vector<float>{2, 4, -1.5f, -1.75f, -2.0f, -2.25f});
  // 0.0 and -0.0 are two values (their bits differ), each its own variant.
  out.fill(9.0f);
  k(-0.0f, smoothing::none, false, 5, x, out);  // an int converts to std::int64_t without loss
  CHECK(out.to_host()[5] == 0.0f);
  qd::reset();
}

TEST_CASE("messages name the variant; each value is cached under its own key") {
  qd_test::fresh_dir cache("template-arg-cache");
  auto make = [] {
    return qd::kernel("tail", {"n", "x"}, [](qd::types::template_arg<int> n, qd::types::ndarray<float, 1> x) {
      qd::range_for(1, [&](qd::i32) { x[n] = 1.0f; });
    });
  };
  qd_test::init_cpu({.offline_cache_file_path = cache.str(), .check_out_of_bound = true});
  auto k = make();
  qd::ndarray<float, 1> x(4);
  CHECK_THROWS_WITH_AS(k(7, x), Contains("kernel 'tail<n=7>', parameter 'x'"), qd::user_error);
  k(3, x);
  CHECK(k.per_offload_cache_observations().constructs_compiled == 1);
  CHECK(x.to_host() == std::vector<float>{0, 0, 0, 1});
  // A new program: both values come from the disk cache, neither is compiled again.
  qd_test::init_cpu({.offline_cache_file_path = cache.str(), .check_out_of_bound = true});
  auto again = make();
  qd::ndarray<float, 1> y(4);
  again(3, y);
  CHECK(again.per_offload_cache_observations().constructs_compiled == 0);
  CHECK(again.per_offload_cache_observations().constructs_loaded == 1);
  again(0, y);  // a value not seen before: compiled
  CHECK(again.per_offload_cache_observations().constructs_compiled == 1);
  CHECK(y.to_host() == std::vector<float>{1, 0, 0, 1});
  qd::reset();
}

TEST_CASE("kernel.grad of a kernel with a template argument differentiates the variant of the call's value") {
  qd_test::init_cpu();
  auto k = qd::kernel("power", [](qd::types::template_arg<int> p, qd::types::ndarray<float, 1, qd::needs_grad> x,
                                  qd::types::ndarray<float, 1, qd::needs_grad> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::f32 v = x[i];
      for (int k2 = 1; k2 < p; ++k2) v = v * x[i];
      y[i] = v;
    });
  });
  qd::ndarray<float, 1> x(3, qd::needs_grad), y(3, qd::needs_grad);
  x.from_host(std::vector<float>{1.0f, 2.0f, 3.0f});
  y.grad().fill(1.0f);
  k(3, x, y);
  k.grad(3, x, y);
  CHECK(y.to_host() == std::vector<float>{1.0f, 8.0f, 27.0f});
  CHECK(x.grad().to_host() == std::vector<float>{3.0f, 12.0f, 27.0f});  // 3 x^2
  qd::reset();
}
