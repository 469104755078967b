// Compile-only mode with NVRTC (SPEC §7, issue 5): every suite kernel compiled for
// sm_90 without a GPU or libcuda, in both variants, cached, and loaded back.
#include <doctest/doctest.h>

#include "backend/compile_only_support.hpp"
#include "backend/suite_kernels.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"

namespace {

// Why NVRTC cannot be used here, or nothing.
std::optional<std::string> nvrtc_missing() {
  try {
    qd::backend::locate_library(qd::backend::cuda::nvrtc_library());
    return std::nullopt;
  } catch (const qd::error& e) {
    return std::string(e.what());
  }
}

}  // namespace

TEST_CASE("every suite kernel compiles for sm_90 with NVRTC in compile-only mode, split and whole, and loads back") {
  if (auto why = nvrtc_missing()) {
    MESSAGE("skipped: NVRTC is not installed: " << *why);
    return;
  }
  const qd::config sm90{.arch = qd::arch::cuda, .cuda_arch = 90};
  SUBCASE("per_offload on, bounds checks on") {
    qd_test::scratch_directory cache("nvrtc-split");
    qd_test::check_compile_only_round_trip(sm90, {qd::per_offload_mode::on, true}, cache.str());
  }
  SUBCASE("per_offload off (whole kernels), bounds checks off") {
    qd_test::scratch_directory cache("nvrtc-whole");
    qd_test::check_compile_only_round_trip(sm90, {qd::per_offload_mode::off, false}, cache.str());
  }
}

TEST_CASE("per-offload caching is the default for arch = cuda, also in compile-only mode") {
  if (auto why = nvrtc_missing()) {
    MESSAGE("skipped: NVRTC is not installed: " << *why);
    return;
  }
  qd_test::scratch_directory cache("nvrtc-default");
  qd::init({.arch = qd::arch::cuda, .offline_cache_file_path = cache.str(), .compile_only = true, .cuda_arch = 90,
            .enable_fallback = false});
  CHECK(qd::current_settings().arch == qd::arch::cuda);
  auto k = qd_test::kernels::split_many_values();
  k.compile();
  auto o = k.per_offload_cache_observations();
  CHECK(o.fallback == qd::fallback_reason::none);
  CHECK(o.frontend_constructs_total == 4);
  CHECK(o.constructs_compiled == 4);
  // Editing one construct recompiles only it.
  auto edited = qd::kernel("many_values_edited", {"x", "y", "z", "w", "s"},
                           [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y,
                              qd::types::ndarray<std::int32_t, 2> z, qd::types::ndarray<std::int32_t, 1> w, qd::f32 s) {
                             qd::i32 n = x.shape(0);
                             qd::f32 head = x[0] * s;
                             qd::i32 bound = w[1] % n + 1;
                             qd::range_for(n, [&](qd::i32 i) { y[i] = qd::cos(x[i]) * head; });  // edited
                             qd::range_for(qd::ndrange(z.shape(0), z.shape(1)), [&](qd::i32 i, qd::i32 j) {
                               qd::var<std::int32_t> acc = 0;
                               qd::range_for(j + 1, [&](qd::i32 k2) { acc += k2 * i; });
                               qd::if_(acc > 10, [&] { z(i, j) = acc; }).else_([&] { z(i, j) = -acc; });
                             });
                             y[0] = head + qd::cast<float>(bound);
                             qd::range_for(bound, [&](qd::i32 i) { y[i + 1] = y[i + 1] * 0.5f + qd::random<float>(); });
                           });
  qd::init({.arch = qd::arch::cuda, .offline_cache_file_path = cache.str(), .compile_only = true, .cuda_arch = 90});
  edited.compile();
  o = edited.per_offload_cache_observations();
  CHECK(o.constructs_compiled == 1);
  CHECK(o.constructs_loaded == 3);
  qd::reset();
}

TEST_CASE("compile-only mode refuses to allocate or launch, and needs an explicit cuda_arch") {
  if (auto why = nvrtc_missing()) {
    MESSAGE("skipped: NVRTC is not installed: " << *why);
    return;
  }
  qd_test::scratch_directory cache("nvrtc-refuse");
  CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::cuda, .offline_cache_file_path = cache.str(), .compile_only = true}),
                       doctest::Contains("set cuda_arch"), qd::user_error);
  qd::init({.arch = qd::arch::cuda, .offline_cache_file_path = cache.str(), .compile_only = true, .cuda_arch = 90});
  CHECK_THROWS_WITH_AS(qd_test::allocate_an_array(), doctest::Contains("compile_only is set"), qd::user_error);
  qd::reset();
}
