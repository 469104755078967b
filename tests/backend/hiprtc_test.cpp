// The hipRTC wrapper: found and fingerprinted without being opened, HIP source to a
// code object for gfx90a, and a rejected program as a qd::compile_error carrying
// the log. Skipped, with the reason, where hipRTC is not installed.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "quadrants/backend/amdgpu/hiprtc.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/backend/amdgpu/prelude.hpp"
#include "runtime/runtime_test_support.hpp"

namespace {

bool hip_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("libamdhip64") != std::string::npos || text.str().find("libhiprtc") != std::string::npos;
}

bool hiprtc_installed() {
  try {
    qd::backend::locate_library(qd::backend::amdgpu::hiprtc_library());
    return true;
  } catch (const qd::driver_error& e) {
    const std::string message = std::string("skipped: hipRTC is not installed: ") + e.what();
    MESSAGE(message);
    return false;
  }
}

}  // namespace

using namespace qd::backend::amdgpu;

TEST_CASE("hipRTC is located and fingerprinted for cache keys without being opened") {
  if (!hiprtc_installed()) return;
  REQUIRE_FALSE(hip_mapped());
  std::string fingerprint = hiprtc_fingerprint();
  CHECK(fingerprint.find("missing") == std::string::npos);
  CHECK_FALSE(hip_mapped());
}

TEST_CASE("hipRTC compiles the HIP prelude and a task to a gfx90a code object") {
  if (!hiprtc_installed()) return;
  const std::string message = "hipRTC " + hiprtc_version();
  MESSAGE(message);
  hiprtc_options options;
  options.arch = "gfx90a";
  auto flags = hiprtc_flags(options);
  CHECK(std::find(flags.begin(), flags.end(), "--offload-arch=gfx90a") != flags.end());
  CHECK(std::find(flags.begin(), flags.end(), "-ffp-contract=off") != flags.end());
  const std::string task = R"(
QD_FN void t_run(const qd_ctx* ctx) { ((qd_f32*)ctx->arrays[0].data)[0] = qd_sqrt(2.0f); }
QD_SERIAL_TASK(t)
)";
  auto code = compile_code_object(qd::backend::amdgpu::translation_unit_prelude() + task, options, "kernel 'root'");
  REQUIRE(code.size() > 4);
  CHECK(std::string(reinterpret_cast<const char*>(code.data()), 4) == "\x7f" "ELF");
}

TEST_CASE("gfx targets are checked before hipRTC sees them: it aborts the process on ones it does not know") {
  // Spelling and features need nothing installed.
  CHECK_NOTHROW(check_gfx_spelling("gfx90a"));
  CHECK_NOTHROW(check_gfx_spelling("gfx90a:sramecc+:xnack-"));
  CHECK_NOTHROW(check_gfx_spelling("gfx1030"));
  CHECK_NOTHROW(check_gfx_spelling("gfx10-3-generic"));
  CHECK_THROWS_WITH_AS(check_gfx_spelling("gfx"), doctest::Contains("amdgpu_arch = \"gfx\" is not a gfx target"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(check_gfx_spelling("GFX90A"), doctest::Contains("is not a gfx target"), qd::user_error);
  CHECK_THROWS_WITH_AS(check_gfx_spelling("sm_90"), doctest::Contains("is not a gfx target"), qd::user_error);
  CHECK_THROWS_WITH_AS(check_gfx_spelling("gfx90a:bogus+"), doctest::Contains("has the feature \"bogus+\""),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(check_gfx_spelling("gfx90a:xnack"), doctest::Contains("has the feature \"xnack\""),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(check_gfx_spelling("gfx1030:xnack+"), doctest::Contains("which gfx1030 does not have"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(check_gfx_spelling("gfx803:sramecc-"), doctest::Contains("which gfx803 does not have"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(check_gfx_spelling("gfx906:xnack+:xnack-"), doctest::Contains("names xnack twice"),
                       qd::user_error);

  if (!hiprtc_installed()) return;
  const std::string source = qd::backend::amdgpu::translation_unit_prelude();
  hiprtc_options options;
  options.arch = "gfx90a";
  CHECK(compile_code_object(source, options, "k").size() > 4);
  const auto& known = known_gfx_processors();
  CHECK(std::find(known.begin(), known.end(), "gfx90a") != known.end());  // comgr was found and listed
  // An unknown processor aborted the process inside hipRTC (HIP 5's comgr); now it is an error.
  for (const char* unknown : {"gfx9999", "gfx90", "gfx1"}) {
    CAPTURE(unknown);
    options.arch = unknown;
    CHECK_THROWS_WITH_AS(compile_code_object(source, options, "kernel 'new_gpu'"),
                         doctest::Contains("the installed hipRTC cannot compile for"), qd::user_error);
  }
  options.arch = "gfx1030:xnack+";
  CHECK_THROWS_WITH_AS(compile_code_object(source, options, "k"), doctest::Contains("does not have"), qd::user_error);
}

TEST_CASE("a program hipRTC rejects is a qd::compile_error with hipRTC's log and the generated line") {
  if (!hiprtc_installed()) return;
  const std::string source = qd::backend::amdgpu::translation_unit_prelude() +
                             "QD_FN void qd_broken(const qd_ctx* ctx) {\n  qd_no_such_value = 1;\n}\n";
  try {
    compile_code_object(source, hiprtc_options{}, "kernel 'broken'");
    FAIL("hipRTC accepted an invalid program");
  } catch (const qd::compile_error& e) {
    std::string message = e.what();
    CHECK(message.find("kernel 'broken': hipRTC rejected generated HIP code") != std::string::npos);
    CHECK(message.find("qd_no_such_value = 1;") != std::string::npos);
    CHECK(e.log().find("qd_no_such_value") != std::string::npos);
    CHECK(e.options().find("--offload-arch=gfx90a") != std::string::npos);
  }
}

TEST_CASE("hipRTC is safe to call from several threads at once (the wrapper serializes it)") {
  if (!hiprtc_installed()) return;
  const std::string source = qd::backend::amdgpu::translation_unit_prelude() + R"(
QD_FN void t_run(const qd_ctx* ctx) { ((qd_f32*)ctx->arrays[0].data)[0] = qd_exp(1.0f); }
QD_SERIAL_TASK(t)
)";
  std::vector<std::size_t> sizes(3, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < sizes.size(); ++t)
    threads.emplace_back([&, t] { sizes[t] = compile_code_object(source, hiprtc_options{}, "kernel 'threads'").size(); });
  for (auto& t : threads) t.join();
  CHECK(sizes[0] > 0);
  CHECK(sizes[1] == sizes[0]);
  CHECK(sizes[2] == sizes[0]);
}

TEST_CASE("QD_HIPRTC_PATH naming nothing usable is a qd::driver_error naming the variable") {
  qd_test::scoped_env bad("QD_HIPRTC_PATH", "/nonexistent");
  CHECK_THROWS_WITH_AS(qd::backend::locate_library(hiprtc_library()), doctest::Contains("QD_HIPRTC_PATH"),
                       qd::driver_error);
}
