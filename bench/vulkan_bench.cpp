// The Vulkan backend on this machine's driver (lavapipe: Vulkan on the CPU, so every run
// figure is CPU-emulated Vulkan). Compile: one construct's generated shader through
// shaderc in-process plus vkCreateComputePipelines, against glslangValidator -V of the
// same GLSL (a process, as LIMITS.md measured it) plus the same pipeline creation.
// Run: saxpy and a 5-point stencil, generated against hand-written GLSL dispatched by
// the same device code; and the host time of one launch (record, submit, wait) against
// a resubmitted pre-recorded command buffer.
// Usage: vulkan_bench [rounds] [saxpy elements] [stencil side]
#include <quadrants/quadrants.hpp>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "quadrants/analysis/split.hpp"
#include "quadrants/backend/vulkan/device.hpp"
#include "quadrants/codegen/glsl_emitter.hpp"
#include "quadrants/codegen/glsl_task_info.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/lang/kernel_signature.hpp"

namespace vk = qd::backend::vulkan;
using qd::backend::array_abi;
using qd::backend::launch_context;

namespace {

// A traced kernel's split tasks (one per construct) as GLSL, entries qd_task<k>, and
// each task's parameter map (task parameter -> kernel parameter).
struct generated {
  std::string source;
  std::vector<std::vector<std::int32_t>> params;
};
template <class F>
generated generated_glsl(const vk::vulkan_device& d, const F& body) {
  qd::detail::tracer t("bench", {});
  qd::detail::trace_kernel(body, t);
  qd::ir::eliminate_dead_code(t.fn);
  const auto s = qd::analysis::analyze_structure(t.fn);
  const auto split = qd::analysis::plan_split(t.fn, s);
  generated g{d.prelude(), {}};
  for (std::size_t k = 0; k < split.plan.tasks.size(); ++k) {
    auto task = qd::codegen::lower_task(t.fn, s, split.plan.tasks[k], split.plan);
    g.source += qd::codegen::emit_glsl_task(task, "qd_task" + std::to_string(k), {false, d.glsl_target()}, "bench");
    g.params.push_back(task.param_map);
  }
  return g;
}

// A launch's arguments in task order, from the kernel's.
struct task_args {
  std::vector<array_abi> arrays;
  std::vector<std::uint64_t> scalars;
  std::int64_t error[5] = {};
  task_args(const std::vector<std::int32_t>& map, const std::vector<array_abi>& arrays_of_kernel,
            const std::vector<std::uint64_t>& scalars_of_kernel)
      : arrays(map.size()), scalars(map.size()) {
    for (std::size_t j = 0; j < map.size(); ++j) {
      arrays[j] = arrays_of_kernel[static_cast<std::size_t>(map[j])];
      scalars[j] = scalars_of_kernel[static_cast<std::size_t>(map[j])];
    }
  }
  launch_context context() { return {arrays.data(), scalars.data(), arrays.size(), nullptr, 0, error}; }
};

// y = a x + y over [0, n): as someone would write it by hand, on the same launch ABI.
const char* saxpy_by_hand = R"(
//@qd_task saxpy 128 parallel 0
#ifdef QD_TASK_saxpy
layout(local_size_x = 128) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer floats { float v[]; };
void main() {
  qd_params_ref p = qd_params_ref(qd_push.params);
  floats x = floats(p.arrays[0].data), y = floats(p.arrays[1].data);
  float a = uintBitsToFloat(uint(p.scalars[2]));
  int n = int(p.arrays[0].shape[0]);
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += stride) y.v[i] = a * x.v[i] + y.v[i];
}
#endif
)";

// out(i, j) = (u(i-1, j) + u(i+1, j) + u(i, j-1) + u(i, j+1)) / 4 inside an n x n grid.
const char* stencil_by_hand = R"(
//@qd_task stencil 128 parallel 0
#ifdef QD_TASK_stencil
layout(local_size_x = 128) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer floats { float v[]; };
void main() {
  qd_params_ref p = qd_params_ref(qd_push.params);
  floats u = floats(p.arrays[0].data), o = floats(p.arrays[1].data);
  int n = int(p.arrays[0].shape[0]), m = n - 2;
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int k = int(gl_GlobalInvocationID.x); k < m * m; k += stride) {
    int i = k / m + 1, j = k % m + 1, c = i * n + j;
    o.v[c] = 0.25 * (u.v[c - n] + u.v[c + n] + u.v[c - 1] + u.v[c + 1]);
  }
}
#endif
)";

// One launch's wall-clock and process CPU milliseconds (lavapipe runs workgroups on
// threads of this process, so CPU time measures its work even on a loaded machine);
// medians over `rounds`, after one warm-up launch.
struct launch_time {
  double wall = 0, cpu = 0;
};
double cpu_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}
launch_time time_launch(vk::vulkan_device& d, void* entry, const launch_context& c, int rounds) {
  d.launch(entry, true, c);
  std::vector<double> wall, cpu;
  for (int r = 0; r < rounds; ++r) {
    const double c0 = cpu_ms();
    wall.push_back(qd_bench::ms([&] { d.launch(entry, true, c); }));
    cpu.push_back(cpu_ms() - c0);
  }
  return {qd_bench::median(wall), qd_bench::median(cpu)};
}

void report(const char* what, const launch_time& g, const launch_time& h, bool same) {
  std::printf(
      "  %s: generated %.1f ms (CPU %.1f ms), by hand %.1f ms (CPU %.1f ms): %.2fx wall, %.2fx CPU "
      "(target <= 1.3); results %s\n",
      what, g.wall, g.cpu, h.wall, h.cpu, g.wall / h.wall, g.cpu / h.cpu, same ? "equal" : "DIFFER");
}

std::vector<float> read(vk::vulkan_device& d, void* p, std::size_t n) {
  std::vector<float> v(n);
  d.copy_to_host(v.data(), p, n * sizeof(float));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const std::int64_t n = argc > 2 ? std::atoll(argv[2]) : std::int64_t{1} << 24;
  const std::int64_t side = argc > 3 ? std::atoll(argv[3]) : 2048;
  ::setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);  // every pipeline is compiled, not loaded from Mesa's cache
  std::unique_ptr<vk::vulkan_device> d;
  try {
    d = vk::make_device({});
  } catch (const qd::error& e) {
    std::printf("vulkan_bench: skipped, no Vulkan device: %s\n", e.what());
    return 0;
  }
  std::printf("Vulkan device: %s (%s)\n%s\n\n", d->description().c_str(), d->target().c_str(),
              d->compiler_identity().c_str());

  // ---- compile: one construct of about 30 operations ----------------------------------
  const std::string one = generated_glsl(*d, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b,
                                                qd::types::ndarray<float, 1> c, qd::types::ndarray<float, 1> out) {
                            qd_bench::construct(a, b, c, out, 3);
                          }).source;
  const std::string entry = "qd_task0";
  const double first = qd_bench::ms([&] { d->compile(one, "bench"); });  // shaderc's start-up in this process
  std::vector<double> shaderc_ms, shaderc_opt_ms, glslang_ms, pipeline_ms;
  auto optimizing = vk::make_device({.compile_only = true, .target = d->glsl_target(), .compiler = {.optimize = true}});
  char dir[] = "/tmp/qd-vulkan-bench-XXXXXX";
  if (!::mkdtemp(dir)) return 1;
  const std::string file = std::string(dir) + "/construct.comp", spv = std::string(dir) + "/construct.spv";
  std::ofstream(file) << one;
  const std::string glslang = "glslangValidator -V --target-env vulkan1.2 -S comp -D" +
                              qd::codegen::glsl_task_macro(entry) + " -o " + spv + " " + file + " > /dev/null 2>&1";
  const bool have_glslang = std::system("glslangValidator --version > /dev/null 2>&1") == 0;
  std::vector<std::byte> binary;
  for (int r = 0; r < rounds; ++r) {
    shaderc_ms.push_back(qd_bench::ms([&] { binary = d->compile(one, "bench"); }));
    shaderc_opt_ms.push_back(qd_bench::ms([&] { optimizing->compile(one, "bench"); }));
    if (have_glslang) glslang_ms.push_back(qd_bench::ms([&] { std::system(glslang.c_str()); }));
    auto fresh = vk::make_device({});  // a new pipeline cache: the pipeline is compiled each round
    pipeline_ms.push_back(qd_bench::ms([&] { fresh->load(binary, "bench"); }));
  }
  const double sc = qd_bench::median(shaderc_ms), pl = qd_bench::median(pipeline_ms);
  std::printf("compile one construct (%zu lines of GLSL with the prelude), medians of %d:\n",
              static_cast<std::size_t>(std::count(one.begin(), one.end(), '\n')), rounds);
  std::printf("  shaderc in-process          %7.2f ms (first in the process %.2f ms; with -O %.2f ms)\n", sc, first,
              qd_bench::median(shaderc_opt_ms));
  std::printf("  vkCreateComputePipelines    %7.2f ms\n", pl);
  if (have_glslang) {
    const double gl = qd_bench::median(glslang_ms);
    std::printf("  glslangValidator -V process %7.2f ms\n", gl);
    std::printf("  shaderc + pipeline %.2f ms against glslangValidator + pipeline %.2f ms: %.2fx (target <= 1.3)\n\n",
                sc + pl, gl + pl, (sc + pl) / (gl + pl));
  } else {
    std::printf("  glslangValidator not installed (glslang-tools): no baseline\n\n");
  }
  ::unlink(file.c_str());
  ::unlink(spv.c_str());
  ::rmdir(dir);

  // ---- run: saxpy and a 5-point stencil, generated against by hand ----------------------
  std::printf("run on %s (CPU-emulated Vulkan when the device is a CPU), medians of %d launches:\n",
              d->description().c_str(), rounds);
  {
    const generated gen =
        generated_glsl(*d, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::f32 a) {
          qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = a * x[i] + y[i]; });
        });
    auto gm = d->load(d->compile(gen.source, "saxpy"), "saxpy");
    auto hm = d->load(d->compile(d->prelude() + saxpy_by_hand, "saxpy"), "saxpy");
    std::vector<float> x(static_cast<std::size_t>(n)), y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 101), y[i] = static_cast<float>(i % 7);
    void* dx = d->allocate(x.size() * 4);
    void* dy = d->allocate(y.size() * 4);
    d->copy_from_host(dx, x.data(), x.size() * 4);
    std::vector<array_abi> arrays(3);
    arrays[0].data = dx, arrays[0].shape[0] = n, arrays[1].data = dy, arrays[1].shape[0] = n;
    const std::vector<std::uint64_t> scalars = {0, 0, std::bit_cast<std::uint32_t>(0.5f)};
    task_args generated_args(gen.params.at(0), arrays, scalars), by_hand({0, 1, 2}, arrays, scalars);
    d->copy_from_host(dy, y.data(), y.size() * 4);
    const launch_time g = time_launch(*d, gm->entry("qd_task0"), generated_args.context(), rounds);
    const auto gy = read(*d, dy, y.size());
    d->copy_from_host(dy, y.data(), y.size() * 4);
    const launch_time h = time_launch(*d, hm->entry("saxpy"), by_hand.context(), rounds);
    report(("saxpy, " + std::to_string(n) + " floats").c_str(), g, h, gy == read(*d, dy, y.size()));
    d->release(dx);
    d->release(dy);
  }
  {
    const generated gen = generated_glsl(*d, [](qd::types::ndarray<float, 2> u, qd::types::ndarray<float, 2> out) {
      qd::range_for(qd::ndrange(u.shape(0) - 2, u.shape(1) - 2), [&](qd::i32 i, qd::i32 j) {
        out(i + 1, j + 1) = 0.25f * (u(i, j + 1) + u(i + 2, j + 1) + u(i + 1, j) + u(i + 1, j + 2));
      });
    });
    auto gm = d->load(d->compile(gen.source, "stencil"), "stencil");
    auto hm = d->load(d->compile(d->prelude() + stencil_by_hand, "stencil"), "stencil");
    const auto cells = static_cast<std::size_t>(side * side);
    std::vector<float> u(cells);
    for (std::size_t i = 0; i < cells; ++i) u[i] = static_cast<float>((i * 7919) % 1000) * 0.001f;
    void* du = d->allocate(cells * 4);
    void* dout = d->allocate(cells * 4);
    d->copy_from_host(du, u.data(), cells * 4);
    std::vector<array_abi> arrays(2);
    arrays[0].data = du, arrays[0].shape[0] = side, arrays[0].shape[1] = side;
    arrays[1].data = dout, arrays[1].shape[0] = side, arrays[1].shape[1] = side;
    const std::vector<std::uint64_t> scalars = {0, 0};
    task_args generated_args(gen.params.at(0), arrays, scalars), by_hand({0, 1}, arrays, scalars);
    std::vector<float> zero(cells, 0.0f);
    d->copy_from_host(dout, zero.data(), cells * 4);
    const launch_time g = time_launch(*d, gm->entry("qd_task0"), generated_args.context(), rounds);
    const auto go = read(*d, dout, cells);
    d->copy_from_host(dout, zero.data(), cells * 4);
    const launch_time h = time_launch(*d, hm->entry("stencil"), by_hand.context(), rounds);
    report(("5-point stencil, " + std::to_string(side) + " x " + std::to_string(side)).c_str(), g, h,
           go == read(*d, dout, cells));
    d->release(du);
    d->release(dout);
  }
  {
    // One launch of a serial task that does nothing: record, submit, wait, read the error record.
    const std::string idle =
        "//@qd_task idle 1 serial 0\n#ifdef QD_TASK_idle\nlayout(local_size_x = 1) in;\n"
        "void main() {}\n#endif\n";
    auto m = d->load(d->compile(d->prelude() + idle, "idle"), "idle");
    std::int64_t error[5] = {};
    const launch_context c{nullptr, nullptr, 0, nullptr, 0, error};
    // Against the same task recorded once into a command buffer (a device graph) and
    // resubmitted: vkQueueSubmit of the pre-recorded buffer, wait, reset the fence.
    // Interleaved, so that both see the same moments of a shared machine.
    auto recording = d->begin_recording();
    launch_context rc = c;
    rc.queue = recording.get();
    d->launch(m->entry("idle"), false, rc);
    d->end_recording(*recording);
    std::vector<double> t, bare;
    for (int r = 0; r < 400; ++r) {
      t.push_back(qd_bench::ms([&] { d->launch(m->entry("idle"), false, c); }) * 1e3);
      bare.push_back(qd_bench::ms([&] { d->replay(*recording); }) * 1e3);
    }
    const double plain = qd_bench::median(t), submit = qd_bench::median(bare);
    std::printf(
        "  launch overhead, an empty task, medians of 400 interleaved:\n"
        "    record, submit, wait, read the error record: %.1f us\n"
        "    submit a pre-recorded command buffer, wait:  %.1f us\n"
        "    ratio: %.2f\n",
        plain, submit, plain / submit);
  }
  return 0;
}
