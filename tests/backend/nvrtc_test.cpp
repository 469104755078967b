// The NVRTC wrapper: found and fingerprinted without being opened, CUDA source to
// CUBIN for sm_90, and a rejected program as a qd::compile_error carrying the log.
// Skipped, with the reason, where NVRTC is not installed.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "quadrants/backend/cuda/nvrtc.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/backend/cuda/prelude.hpp"
#include "runtime/runtime_test_support.hpp"

namespace {

bool nvrtc_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("libnvrtc") != std::string::npos;
}

bool nvrtc_installed() {
  try {
    qd::backend::locate_library(qd::backend::cuda::nvrtc_library());
    return true;
  } catch (const qd::driver_error& e) {
    const std::string message = std::string("skipped: NVRTC is not installed: ") + e.what();
    MESSAGE(message);
    return false;
  }
}

// A task body in the generated code's style, after the CUDA prelude.
const char* scale_task = R"(
struct t_frame { qd_i64 qd_base; qd_i64 qd_dims[4]; qd_i64 qd_count; };
struct t_red { qd_i32 qd_unused; };
QD_FN void t_red_init(t_red* r) { r->qd_unused = 0; }
QD_FN void t_red_flush(const qd_ctx*, const t_red*) {}
QD_FN void t_prologue(const qd_ctx* ctx, t_frame* f) {
  f->qd_base = 0; f->qd_dims[0] = ctx->arrays[0].shape[0]; f->qd_count = f->qd_dims[0];
}
QD_FN void t_body(const qd_ctx* ctx, const t_frame, t_red*, qd_i32 i, qd_i32, qd_i32, qd_i32) {
  ((qd_f32*)ctx->arrays[0].data)[i] *= 2.0f;
}
QD_PARALLEL_TASK(t, 1)
)";

}  // namespace

using namespace qd::backend::cuda;

TEST_CASE("NVRTC is located and fingerprinted for cache keys without being opened") {
  if (!nvrtc_installed()) return;
  REQUIRE_FALSE(nvrtc_mapped());  // the first test case of this file: nothing has opened NVRTC yet
  std::string fingerprint = nvrtc_fingerprint();
  CHECK(fingerprint.find("libnvrtc") != std::string::npos);
  CHECK(fingerprint.find("missing") == std::string::npos);
  CHECK_FALSE(nvrtc_mapped());
}

TEST_CASE("NVRTC compiles the CUDA prelude and a task to a CUBIN for sm_90, with --minimal") {
  if (!nvrtc_installed()) return;
  auto archs = nvrtc_supported_archs();
  CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
  const std::string message = "NVRTC " + nvrtc_version();
  MESSAGE(message);
  nvrtc_options options;
  options.sm = 90;
  auto flags = nvrtc_flags(options);
  CHECK(std::find(flags.begin(), flags.end(), "-arch=sm_90") != flags.end());
  CHECK(std::find(flags.begin(), flags.end(), "--minimal") != flags.end());
  CHECK(std::find(flags.begin(), flags.end(), "--fmad=false") != flags.end());
  auto cubin = compile_cubin(qd::backend::cuda::translation_unit_prelude() + scale_task, options, "kernel 'scale'");
  REQUIRE(cubin.size() > 4);
  CHECK(std::string(reinterpret_cast<const char*>(cubin.data()), 4) == "\x7f" "ELF");
  options.fast_math = true;
  flags = nvrtc_flags(options);
  CHECK(std::find(flags.begin(), flags.end(), "--use_fast_math") != flags.end());
}

TEST_CASE("NVRTC compiles the device loop's kernel, which calls cudaGraphSetConditional without CUDA headers") {
  if (!nvrtc_installed()) return;
  nvrtc_options options;
  options.sm = 90;
  auto cubin = compile_cubin(graph_loop_source(), options, "qd_graph_set_while");
  REQUIRE(cubin.size() > 4);
  CHECK(std::string(reinterpret_cast<const char*>(cubin.data()), 4) == "\x7f" "ELF");
}

TEST_CASE("an arch this NVRTC cannot target is a qd::user_error listing the ones it can, not a code-generation bug") {
  if (!nvrtc_installed()) return;
  const auto supported = nvrtc_supported_archs();
  REQUIRE_FALSE(supported.empty());
  CHECK(std::find(supported.begin(), supported.end(), 90) != supported.end());
  const std::string source = qd::backend::cuda::translation_unit_prelude();
  for (int sm : {12, 91, 999}) {
    CAPTURE(sm);
    nvrtc_options options;
    options.sm = sm;
    CHECK_THROWS_WITH_AS(compile_cubin(source, options, "kernel 'old_gpu'"),
                         doctest::Contains(fmt::format("kernel 'old_gpu': cuda_arch = {} (sm_{}): NVRTC", sm, sm).c_str()),
                         qd::user_error);
  }
  CHECK_THROWS_WITH_AS(compile_cubin(source, nvrtc_options{.sm = 12}, "k"),
                       doctest::Contains(fmt::format("it knows: {}", supported.front()).c_str()), qd::user_error);
}

TEST_CASE("a program NVRTC rejects is a qd::compile_error with NVRTC's log and the generated line") {
  if (!nvrtc_installed()) return;
  const std::string source = qd::backend::cuda::translation_unit_prelude() +
                             "QD_FN void qd_broken(const qd_ctx* ctx) {\n  qd_no_such_value = 1;\n}\n";
  try {
    compile_cubin(source, nvrtc_options{}, "kernel 'broken'");
    FAIL("NVRTC accepted an invalid program");
  } catch (const qd::compile_error& e) {
    std::string message = e.what();
    CHECK(message.find("kernel 'broken': NVRTC rejected generated CUDA code") != std::string::npos);
    CHECK(message.find("generated line") != std::string::npos);
    CHECK(message.find("qd_no_such_value = 1;") != std::string::npos);  // the offending line, quoted
    CHECK(e.log().find("qd_no_such_value") != std::string::npos);
    CHECK(e.log().find("error") != std::string::npos);
    CHECK(e.kernel() == "kernel 'broken'");
    CHECK(e.options().find("-arch=sm_90") != std::string::npos);
    CHECK(e.source() == source);
  }
}

TEST_CASE("QD_NVRTC_PATH naming nothing usable is a qd::driver_error naming the variable") {
  qd_test::scoped_env bad("QD_NVRTC_PATH", "/nonexistent/libnvrtc.so.13");
  CHECK_THROWS_WITH_AS(qd::backend::locate_library(nvrtc_library()), doctest::Contains("QD_NVRTC_PATH"),
                       qd::driver_error);
  CHECK(nvrtc_fingerprint() == "missing libnvrtc.so.13");
}
