// The NVRTC and hipRTC wrappers (backend/gpu_compiler.hpp and the vendors' files):
// found and fingerprinted without being opened, source to an ELF for the target, a
// rejected program as a qd::compile_error carrying the log and the generated line.
// Skipped, with the reason, where a compiler is not installed.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "backend/gpu_vendors.hpp"
#include "runtime/runtime_test_support.hpp"

namespace {

// A parallel task and a serial one in the generated code's style, after the prelude.
const char* const tasks = R"(
struct t_frame { qd_i64 qd_base; qd_i64 qd_dims[4]; qd_i64 qd_count; };
QD_FN void t_prologue(const qd_ctx* ctx, t_frame* f) {
  f->qd_base = 0; f->qd_dims[0] = ctx->arrays[0].shape[0]; f->qd_count = f->qd_dims[0];
}
QD_PARALLEL_BEGIN(t, 1, QD_BLOCK)
  ((qd_f32*)ctx->arrays[0].data)[qd_i0] *= 2.0f;
QD_PARALLEL_END(t, 1, 0)
QD_FN void s_run(const qd_ctx* ctx) { ((qd_f32*)ctx->arrays[0].data)[0] = qd_sqrt(2.0f); }
QD_SERIAL_TASK(s)
)";

bool has(const std::vector<std::string>& flags, const char* flag) {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool is_elf(const std::vector<std::byte>& code) {
  return code.size() > 4 && std::string(reinterpret_cast<const char*>(code.data()), 4) ==
                                "\x7f"
                                "ELF";
}

}  // namespace

using qd_test::on_amdgpu;
using qd_test::on_cuda;

// The first case of this file: nothing has opened a compiler yet.
TEST_CASE_TEMPLATE("the compiler is located and fingerprinted for cache keys without being opened", V, on_cuda,
                   on_amdgpu) {
  if (!V::compiler_installed()) return;
  REQUIRE_FALSE(V::compiler_mapped());
  const std::string fingerprint = V::compiler_fingerprint();
  const auto file = std::filesystem::canonical(qd::backend::locate_library(V::compiler_library()));
  CHECK(fingerprint.rfind(file.string() + " ", 0) == 0);  // the resolved path, then size and time
  CHECK_FALSE(V::compiler_mapped());
}

TEST_CASE_TEMPLATE("the compiler compiles the prelude and tasks to an ELF for the target, exactly unless fast_math", V,
                   on_cuda, on_amdgpu) {
  if (!V::compiler_installed()) return;
  const std::string message = std::string(V::compiler) + " " + V::compiler_version();
  MESSAGE(message);
  const auto flags = V::flags();
  CHECK(has(flags, V::target_flag));
  CHECK(has(flags, V::exact_flag));
  CHECK_FALSE(has(flags, V::fast_math_flag));
  const auto fast = V::flags(true);
  CHECK(has(fast, V::fast_math_flag));
  CHECK_FALSE(has(fast, V::exact_flag));
  CHECK(is_elf(V::compile(V::prelude() + tasks, "kernel 'scale'")));
}

TEST_CASE_TEMPLATE("a program the compiler rejects is a qd::compile_error with its log and the generated line", V,
                   on_cuda, on_amdgpu) {
  if (!V::compiler_installed()) return;
  const std::string source = V::prelude() + "QD_FN void qd_broken(const qd_ctx* ctx) {\n  qd_no_such_value = 1;\n}\n";
  try {
    V::compile(source, "kernel 'broken'");
    FAIL("the compiler accepted an invalid program");
  } catch (const qd::compile_error& e) {
    const std::string message = e.what();
    CHECK(message.find(fmt::format("kernel 'broken': {} rejected generated {} code", V::compiler, V::language)) !=
          std::string::npos);
    CHECK(message.find("generated line") != std::string::npos);
    CHECK(message.find("qd_no_such_value = 1;") != std::string::npos);  // the offending line, quoted
    CHECK(e.log().find("qd_no_such_value") != std::string::npos);
    CHECK(e.log().find("error") != std::string::npos);
    CHECK(e.kernel() == "kernel 'broken'");
    CHECK(e.options().find(V::cuda ? "-arch=sm_90" : "--offload-arch=gfx90a") != std::string::npos);
    CHECK(e.source() == source);
  }
}

TEST_CASE_TEMPLATE("the compiler's variable naming nothing usable is a qd::driver_error naming it", V, on_cuda,
                   on_amdgpu) {
  qd_test::scoped_env bad(V::compiler_variable, "/nonexistent/libcompiler.so");
  CHECK_THROWS_WITH_AS(qd::backend::locate_library(V::compiler_library()), doctest::Contains(V::compiler_variable),
                       qd::driver_error);
  CHECK(V::compiler_fingerprint() == "missing " + V::compiler_library().names.front());
}

// --- NVRTC -------------------------------------------------------------------------------------

using namespace qd::backend::cuda;

TEST_CASE("NVRTC compiles with --minimal, and the device loop's kernel, which calls cudaGraphSetConditional") {
  if (!on_cuda::compiler_installed()) return;
  CHECK(has(nvrtc_flags({.sm = 90}), "--minimal"));
  auto archs = nvrtc_supported_archs();
  CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
  CHECK(is_elf(compile_cubin(graph_loop_source(), nvrtc_options{.sm = 90}, "qd_graph_set_while")));
}

TEST_CASE("an arch this NVRTC cannot target is a qd::user_error listing the ones it can, not a code-generation bug") {
  if (!on_cuda::compiler_installed()) return;
  const auto supported = nvrtc_supported_archs();
  REQUIRE_FALSE(supported.empty());
  const std::string source = translation_unit_prelude();
  for (int sm : {12, 91, 999}) {
    CAPTURE(sm);
    const std::string expected = fmt::format("kernel 'old_gpu': cuda_arch = {} (sm_{}): NVRTC", sm, sm);
    CHECK_THROWS_WITH_AS(compile_cubin(source, nvrtc_options{.sm = sm}, "kernel 'old_gpu'"),
                         doctest::Contains(expected.c_str()), qd::user_error);
  }
  CHECK_THROWS_WITH_AS(compile_cubin(source, nvrtc_options{.sm = 12}, "k"),
                       doctest::Contains(fmt::format("it knows: {}", supported.front()).c_str()), qd::user_error);
}

TEST_CASE("NVRTC 12.8+ compiles the prelude as a precompiled header, to the CUBIN the inline prelude gives") {
  if (!on_cuda::compiler_installed()) return;
  qd_test::scoped_env on("QD_NVRTC_PCH", "1");
  const nvrtc_pch_statistics before = nvrtc_prelude_pch_statistics();
  if (!before.supported) {
    MESSAGE("skipped: NVRTC " << nvrtc_version() << " has no precompiled headers (12.8+)");
    return;
  }
  // A program no other case compiles; an assert carries its line, which must not move.
  const std::string source = translation_unit_prelude() + tasks +
                             "QD_FN void a_run(const qd_ctx* ctx) { assert(ctx->arrays[0].shape[0] > 3); }\n"
                             "QD_SERIAL_TASK(a)\n";
  const auto precompiled = compile_cubin(source, nvrtc_options{.sm = 90}, "kernel 'pch'");
  const nvrtc_pch_statistics after = nvrtc_prelude_pch_statistics();
  CHECK(after.programs == before.programs + 1);
  CHECK(after.created >= 1);  // by this compile or an earlier one of this process
  CHECK(after.fallbacks == 0);
  CHECK(after.supported);
  const auto plain = compile_cubin(source, nvrtc_options{.sm = 90, .precompiled_prelude = false}, "kernel 'pch'");
  CHECK(nvrtc_prelude_pch_statistics().programs == after.programs);
  CHECK(is_elf(precompiled));
  CHECK(precompiled == plain);
  // Its failure is reported as the inline prelude's, naming the generated line.
  CHECK_THROWS_WITH_AS(compile_cubin(translation_unit_prelude() + "QD_FN void f() { qd_nothing = 1; }\n",
                                     nvrtc_options{.sm = 90}, "kernel 'bad'"),
                       doctest::Contains("qd_nothing = 1;"), qd::compile_error);
  CHECK(nvrtc_prelude_pch_statistics().supported);
  // QD_NVRTC_PCH=0: inline, the same code.
  qd_test::scoped_env off("QD_NVRTC_PCH", "0");
  const std::int64_t programs = nvrtc_prelude_pch_statistics().programs;
  CHECK(compile_cubin(source, nvrtc_options{.sm = 90}, "kernel 'pch'") == plain);
  CHECK(nvrtc_prelude_pch_statistics().programs == programs);
}

// --- hipRTC ------------------------------------------------------------------------------------

namespace amd = qd::backend::amdgpu;

TEST_CASE("gfx targets are checked before hipRTC sees them: it aborts the process on ones it does not know") {
  // Spelling and features need nothing installed.
  CHECK_NOTHROW(amd::check_gfx_spelling("gfx90a"));
  CHECK_NOTHROW(amd::check_gfx_spelling("gfx90a:sramecc+:xnack-"));
  CHECK_NOTHROW(amd::check_gfx_spelling("gfx1030"));
  CHECK_NOTHROW(amd::check_gfx_spelling("gfx10-3-generic"));
  CHECK_THROWS_WITH_AS(amd::check_gfx_spelling("gfx"), doctest::Contains("amdgpu_arch = \"gfx\" is not a gfx target"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(amd::check_gfx_spelling("GFX90A"), doctest::Contains("is not a gfx target"), qd::user_error);
  CHECK_THROWS_WITH_AS(amd::check_gfx_spelling("sm_90"), doctest::Contains("is not a gfx target"), qd::user_error);
  CHECK_THROWS_WITH_AS(amd::check_gfx_spelling("gfx90a:bogus+"), doctest::Contains("has the feature \"bogus+\""),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(amd::check_gfx_spelling("gfx90a:xnack"), doctest::Contains("has the feature \"xnack\""),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(amd::check_gfx_spelling("gfx1030:xnack+"), doctest::Contains("which gfx1030 does not have"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(amd::check_gfx_spelling("gfx803:sramecc-"), doctest::Contains("which gfx803 does not have"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(amd::check_gfx_spelling("gfx906:xnack+:xnack-"), doctest::Contains("names xnack twice"),
                       qd::user_error);

  if (!on_amdgpu::compiler_installed()) return;
  const std::string source = amd::translation_unit_prelude();
  amd::hiprtc_options options;
  options.arch = "gfx90a";
  CHECK(amd::compile_code_object(source, options, "k").size() > 4);
  const auto& known = amd::known_gfx_processors();
  CHECK(std::find(known.begin(), known.end(), "gfx90a") != known.end());  // comgr was found and listed
  // An unknown processor aborted the process inside hipRTC (HIP 5's comgr); now it is an error.
  for (const char* unknown : {"gfx9999", "gfx90", "gfx1"}) {
    CAPTURE(unknown);
    options.arch = unknown;
    CHECK_THROWS_WITH_AS(amd::compile_code_object(source, options, "kernel 'new_gpu'"),
                         doctest::Contains("the installed hipRTC cannot compile for"), qd::user_error);
  }
  options.arch = "gfx1030:xnack+";
  CHECK_THROWS_WITH_AS(amd::compile_code_object(source, options, "k"), doctest::Contains("does not have"),
                       qd::user_error);
}

TEST_CASE("hipRTC is safe to call from several threads at once (the wrapper serializes it)") {
  if (!on_amdgpu::compiler_installed()) return;
  const std::string source = amd::translation_unit_prelude() + R"(
QD_FN void t_run(const qd_ctx* ctx) { ((qd_f32*)ctx->arrays[0].data)[0] = qd_exp(1.0f); }
QD_SERIAL_TASK(t)
)";
  std::vector<std::size_t> sizes(3, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < sizes.size(); ++t)
    threads.emplace_back(
        [&, t] { sizes[t] = amd::compile_code_object(source, amd::hiprtc_options{}, "kernel 'threads'").size(); });
  for (auto& t : threads) t.join();
  CHECK(sizes[0] > 0);
  CHECK(sizes[1] == sizes[0]);
  CHECK(sizes[2] == sizes[0]);
}
