// Compile-only mode with hipRTC (SPEC §7, issue 5): every suite kernel compiled for
// gfx90a without a GPU, in both variants, cached, and loaded back.
#include <doctest/doctest.h>

#include "backend/compile_only_support.hpp"
#include "quadrants/backend/amdgpu/hiprtc.hpp"

namespace {

// Why hipRTC cannot be used here, or nothing.
std::optional<std::string> hiprtc_missing() {
  try {
    qd::backend::locate_library(qd::backend::amdgpu::hiprtc_library());
    return std::nullopt;
  } catch (const qd::error& e) {
    return std::string(e.what());
  }
}

}  // namespace

TEST_CASE("every suite kernel compiles for gfx90a with hipRTC in compile-only mode, split and whole, and loads back") {
  if (auto why = hiprtc_missing()) {
    MESSAGE("skipped: hipRTC is not installed (scripts/install-deps installs libamdhip64-dev): " << *why);
    return;
  }
  const qd::config gfx90a{.arch = qd::arch::amdgpu, .amdgpu_arch = "gfx90a"};
  SUBCASE("per_offload on, bounds checks on") {
    qd_test::scratch_directory cache("hiprtc-split");
    qd_test::check_compile_only_round_trip(gfx90a, {qd::per_offload_mode::on, true}, cache.str());
  }
  SUBCASE("per_offload off (whole kernels), bounds checks off") {
    qd_test::scratch_directory cache("hiprtc-whole");
    qd_test::check_compile_only_round_trip(gfx90a, {qd::per_offload_mode::off, false}, cache.str());
  }
}

TEST_CASE("compile-only mode for amdgpu needs an explicit amdgpu_arch and refuses to allocate") {
  if (auto why = hiprtc_missing()) {
    MESSAGE("skipped: hipRTC is not installed: " << *why);
    return;
  }
  qd_test::scratch_directory cache("hiprtc-refuse");
  CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::amdgpu, .offline_cache_file_path = cache.str(), .compile_only = true}),
                       doctest::Contains("set amdgpu_arch"), qd::user_error);
  qd::init({.arch = qd::arch::amdgpu, .offline_cache_file_path = cache.str(), .compile_only = true,
            .amdgpu_arch = "gfx90a"});
  CHECK(qd::current_settings().arch == qd::arch::amdgpu);
  CHECK_THROWS_WITH_AS(qd_test::allocate_an_array(), doctest::Contains("compile_only is set"), qd::user_error);
  qd::reset();
}
