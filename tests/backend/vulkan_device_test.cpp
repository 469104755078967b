// The Vulkan backend's loader, shaderc and device on a real driver (lavapipe in CI):
// memory and copies, a hand-written GLSL compute shader compiled by shaderc, validated by
// spirv-val and launched through the device, the error record, print records, and the
// failures (a rejected shader, a corrupted module, out of memory) as clear errors.
// Without a Vulkan device each test reports itself skipped, with the reason.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#if __has_include(<shaderc/shaderc.h>)
#include <shaderc/shaderc.h>
#define QD_TEST_HAS_SHADERC_HEADER 1
#endif

#include "backend/vulkan_support.hpp"
#include "quadrants/backend/vulkan/loader.hpp"
#include "quadrants/backend/vulkan/shaderc.hpp"
#include "quadrants/codegen/glsl_task_info.hpp"
#include "runtime/runtime_test_support.hpp"

namespace vk = qd::backend::vulkan;
using qd::backend::array_abi;
using qd::backend::launch_context;

namespace {

// y[i] = a * x[i] + y[i] over a grid-stride loop, with the same ABI the emitter uses.
const char* saxpy_task = R"(
//@qd_task saxpy 64 parallel 0
#ifdef QD_TASK_saxpy
layout(local_size_x = 64) in;
void main() {
  qd_params_ref p = qd_params_ref(qd_push.params);
  qd_array x = p.arrays[0];
  qd_array y = p.arrays[1];
  float a = uintBitsToFloat(uint(p.scalars[2]));
  int64_t stride = int64_t(gl_NumWorkGroups.x) * int64_t(gl_WorkGroupSize.x);
  for (int64_t i = int64_t(gl_GlobalInvocationID.x); i < x.shape[0]; i += stride) {
    uint64_t yi = y.data + uint64_t(i) * 4ul;
    qd_f32_ref(yi).v = a * qd_f32_ref(x.data + uint64_t(i) * 4ul).v + qd_f32_ref(yi).v;
  }
}
#endif
)";

// A serial task that reports an out-of-range index and prints a record.
const char* report_task = R"(
//@qd_task report 1 serial 1
//@qd_print 0 t76616c7565 vi32 t616e64 vf64
#ifdef QD_TASK_report
layout(local_size_x = 1) in;
void main() {
  if (atomicCompSwap(qd_u32_ref(qd_push.error).v, 0u, 1u) == 0u) {
    qd_i64_ref(qd_push.error + 8ul).v = 3l;
    qd_i64_ref(qd_push.error + 16ul).v = 1l;
    qd_i64_ref(qd_push.error + 24ul).v = -7l;
    qd_i64_ref(qd_push.error + 32ul).v = 10l;
  }
  uint at = atomicAdd(qd_u32_ref(qd_push.print).v, 3u);
  uint64_t w = qd_push.print + 8ul + uint64_t(at) * 8ul;
  qd_u64_ref(w + 8ul).v = uint64_t(int64_t(-42));
  qd_u64_ref(w + 16ul).v = doubleBitsToUint64(0.125lf);
  qd_u64_ref(w).v = (1ul << 32) | 2ul;
}
#endif
)";

}  // namespace

TEST_CASE("the Vulkan loader is located, and a bad QD_VULKAN_PATH is a driver_error naming it") {
  {
    qd_test::scoped_env bad("QD_VULKAN_PATH", "/nonexistent/libvulkan.so.1");
    CHECK_THROWS_WITH_AS(qd::backend::locate_library(vk::loader_library()), doctest::Contains("QD_VULKAN_PATH"),
                         qd::driver_error);
  }
  try {
    const std::string path = qd::backend::locate_library(vk::loader_library());
    CHECK(path.find("libvulkan") != std::string::npos);
  } catch (const qd::driver_error& e) {
    const std::string why = std::string("skipped: no Vulkan loader: ") + e.what();
    MESSAGE(why);
  }
}

TEST_CASE("a failed Vulkan call is a driver_error with the call, the VkResult's name, file and line") {
#if QD_HAS_VULKAN_HEADERS
  try {
    QD_VULKAN_CHECK(VK_ERROR_DEVICE_LOST);
    FAIL("no throw");
  } catch (const qd::driver_error& e) {
    const std::string m = e.what();
    CHECK(m.find("VK_ERROR_DEVICE_LOST") != std::string::npos);
    CHECK(m.find("the device was lost") != std::string::npos);
    CHECK(m.find("vulkan_device_test.cpp") != std::string::npos);
    CHECK(e.code() == VK_ERROR_DEVICE_LOST);
  }
  CHECK(vk::result_text(VK_ERROR_OUT_OF_DEVICE_MEMORY).find("VK_ERROR_OUT_OF_DEVICE_MEMORY (-2") == 0);
  CHECK(vk::result_text(static_cast<VkResult>(-12345)) == "VkResult -12345");
#else
  MESSAGE("skipped: built without the Vulkan headers");
#endif
}

TEST_CASE("shaderc's enumerators as declared match shaderc.h, and a bad QD_SHADERC_PATH names the variable") {
#ifdef QD_TEST_HAS_SHADERC_HEADER
  CHECK(shaderc_source_language_glsl == 0);
  CHECK(shaderc_compute_shader == 2);
  CHECK(shaderc_target_env_vulkan == 0);
  CHECK(static_cast<std::uint32_t>(shaderc_env_version_vulkan_1_2) == ((1u << 22) | (2u << 12)));
  CHECK(shaderc_optimization_level_zero == 0);
  CHECK(shaderc_optimization_level_performance == 2);
  CHECK(shaderc_compilation_status_success == 0);
#else
  MESSAGE("shaderc.h not installed: enumerators not compared");
#endif
  qd_test::scoped_env bad("QD_SHADERC_PATH", "/nonexistent/libshaderc.so.1");
  CHECK_THROWS_WITH_AS(qd::backend::locate_library(vk::shaderc_library()), doctest::Contains("QD_SHADERC_PATH"),
                       qd::driver_error);
  CHECK(vk::shaderc_fingerprint() == "missing libqd_shaderc.so");
}

TEST_CASE("task markers round-trip, and a corrupted SPIR-V bundle is refused, never a crash") {
  qd::codegen::glsl_task_info t;
  t.entry = "qd_o1234";
  t.workgroup_size = 96;
  t.parallel = true;
  t.prints = {{{true, "x = \"%d\"\n", qd::dtype::i32}, {false, {}, qd::dtype::f64}}, {}};
  const auto back = qd::codegen::glsl_tasks_in("junk\n" + qd::codegen::glsl_task_markers(t) + "more junk\n");
  REQUIRE(back.size() == 1);
  CHECK(back[0] == t);
  CHECK_THROWS_AS(qd::codegen::glsl_tasks_in("//@qd_task a 1 sometimes 0\n"), qd::internal_error);
  CHECK_THROWS_AS(qd::codegen::glsl_tasks_in("//@qd_task a 1 serial 1\n"), qd::internal_error);

  const std::vector<vk::compiled_shader> shaders = {{t, {0x07230203u, 0x10500u, 0u, 10u, 0u}}};
  const std::vector<std::byte> bytes = vk::encode_bundle(shaders);
  auto decoded = vk::decode_bundle(bytes);
  REQUIRE(decoded.has_value());
  CHECK(decoded->at(0).task == t);
  CHECK(decoded->at(0).spirv == shaders[0].spirv);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) CHECK_FALSE(vk::decode_bundle({bytes.data(), cut}).has_value());
  // A kernel with no task (all of it dead code) is an empty bundle, not a malformed one.
  const auto none = vk::decode_bundle(vk::encode_bundle({}));
  REQUIRE(none.has_value());
  CHECK(none->empty());
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::vector<std::byte> flipped = bytes;
    flipped[at] ^= std::byte{0x40};
    auto d = vk::decode_bundle(flipped);  // either refused or decoded to something else; never a crash
    if (d) CHECK_FALSE((d->at(0).task == t && d->at(0).spirv == shaders[0].spirv));
  }
}

TEST_CASE("the Vulkan device: memory, copies, and a hand-written shader compiled by shaderc and launched") {
  auto d = qd_test::open_vulkan();
  if (!d) return;
  MESSAGE("Vulkan device: " << d->description() << "; target " << d->target() << "; " << d->compiler_identity());
  CHECK(d->name() == "vulkan");
  CHECK(d->traits().splits_by_default);
  CHECK(d->target().find(d->glsl_target().key()) != std::string::npos);

  // Copies of every size round-trip, also into the middle of an allocation.
  for (std::size_t n : {1u, 3u, 8u, 1000u, 100003u}) {
    std::vector<unsigned char> in(n), out(n, 0);
    for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<unsigned char>(i * 31 + 7);
    void* p = d->allocate(n);
    d->copy_from_host(p, in.data(), n);
    d->copy_to_host(out.data(), p, n);
    CHECK(out == in);
    if (n > 2) {
      const unsigned char two[2] = {0xab, 0xcd};
      d->copy_from_host(static_cast<unsigned char*>(p) + 1, two, 2);
      d->copy_to_host(out.data(), p, n);
      CHECK(out[1] == 0xab);
      CHECK(out[2] == 0xcd);
      CHECK(out[0] == in[0]);
    }
    d->release(p);
  }

  const std::string source = d->prelude() + saxpy_task;
  const std::vector<std::byte> binary = d->compile(source, "kernel 'saxpy'");
  auto shaders = vk::decode_bundle(binary);
  REQUIRE(shaders.has_value());
  REQUIRE(shaders->size() == 1);
  CHECK(shaders->at(0).task.workgroup_size == 64);
  CHECK(qd_test::spirv_val_rejects(shaders->at(0).spirv).empty());
  auto module = d->load(binary, "kernel 'saxpy'");
  void* entry = module->entry("saxpy");
  CHECK_THROWS_AS(module->entry("no_such_task"), qd::driver_error);

  const std::int64_t n = 100001;
  std::vector<float> x(n), y(n), want(n);
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    x[i] = static_cast<float>(i % 97) * 0.5f;
    y[i] = static_cast<float>(i % 13) - 6.0f;
    want[i] = 1.5f * x[i] + y[i];
  }
  void* dx = d->allocate(n * 4);
  void* dy = d->allocate(n * 4);
  d->copy_from_host(dx, x.data(), n * 4);
  d->copy_from_host(dy, y.data(), n * 4);
  array_abi arrays[3] = {};
  arrays[0].data = dx;
  arrays[0].shape[0] = n;
  arrays[1].data = dy;
  arrays[1].shape[0] = n;
  std::uint64_t scalars[3] = {0, 0, std::bit_cast<std::uint32_t>(1.5f)};
  std::int64_t error[5] = {};
  d->launch(entry, true, launch_context{arrays, scalars, 3, nullptr, 0, error});
  std::vector<float> got(n);
  d->copy_to_host(got.data(), dy, n * 4);
  CHECK(got == want);
  CHECK(error[0] == 0);
  d->release(dx);
  d->release(dy);
}

TEST_CASE("the Vulkan device reads back a launch's error record and prints its qd::print records") {
  auto d = qd_test::open_vulkan();
  if (!d) return;
  auto module = d->load(d->compile(d->prelude() + report_task, "kernel 'report'"), "kernel 'report'");
  std::int64_t error[5] = {};
  const std::string out = qd_test::capture_stdout([&] {
    d->launch(module->entry("report"), false, launch_context{nullptr, nullptr, 0, nullptr, 0, error, true});
  });
  CHECK(out == "value -42 and 0.125\n");
  CHECK(error[0] == 1);
  CHECK(error[1] == 3);
  CHECK(error[2] == 1);
  CHECK(error[3] == -7);
  CHECK(error[4] == 10);
  // The record and the print buffer were reset: the next launch starts clean.
  std::int64_t again[5] = {};
  const std::string second = qd_test::capture_stdout([&] {
    d->launch(module->entry("report"), false, launch_context{nullptr, nullptr, 0, nullptr, 0, again, true});
  });
  CHECK(second == out);
  CHECK(again[0] == 1);
}

TEST_CASE("a shader shaderc rejects is a qd::compile_error with the log and the offending generated line") {
  auto d = qd_test::open_vulkan();
  if (!d) return;
  const std::string source = d->prelude() +
                             "//@qd_task broken 1 serial 0\n#ifdef QD_TASK_broken\nlayout(local_size_x = 1) in;\n"
                             "void main() {\n  qd_no_such_value = 1;\n}\n#endif\n";
  try {
    d->compile(source, "kernel 'broken'");
    FAIL("shaderc accepted an invalid shader");
  } catch (const qd::compile_error& e) {
    const std::string m = e.what();
    CHECK(m.find("kernel 'broken': shaderc rejected generated GLSL") != std::string::npos);
    CHECK(m.find("generated line") != std::string::npos);
    CHECK(m.find("qd_no_such_value = 1;") != std::string::npos);
    CHECK(e.log().find("qd_no_such_value") != std::string::npos);
    CHECK(e.options().find("-DQD_TASK_broken") != std::string::npos);
    CHECK(e.source() == source);
  }
}

TEST_CASE("a corrupted module, an impossible allocation and compile-only use are clear errors") {
  auto d = qd_test::open_vulkan();
  if (!d) return;
  std::vector<std::byte> binary = d->compile(d->prelude() + saxpy_task, "kernel 'saxpy'");
  binary.resize(binary.size() - 4);
  CHECK_THROWS_WITH_AS(d->load(binary, "kernel 'saxpy'"), doctest::Contains("malformed"), qd::driver_error);
  // More than any device can allocate at once: refused before or by the driver.
  CHECK_THROWS_WITH_AS(d->allocate(std::size_t{1} << 50), doctest::Contains("bytes"), qd::driver_error);
  void* p = d->allocate(64);  // the device still works
  CHECK(p != nullptr);
  d->release(p);

  auto c = vk::make_device({.compile_only = true, .target = d->glsl_target()});
  CHECK(c->description() == "compile-only");
  CHECK(c->target() == d->target());
  auto m = c->load(c->compile(c->prelude() + saxpy_task, "kernel 'saxpy'"), "kernel 'saxpy'");
  CHECK(m->entry("saxpy") == nullptr);
  CHECK_THROWS_WITH_AS(c->allocate(16), doctest::Contains("compile_only"), qd::user_error);
}
