// Static GPU code size without a GPU: the generated saxpy, 5-point stencil (a 2-D
// qd::ndrange) and N-body force loop, compiled for sm_90 by the real NVRTC with the
// backend's own options, disassembled by nvdisasm, their SASS instructions counted against
// the same kernels written by hand as grid-stride CUDA loops compiled the same way (target
// <= 1.2x). With hipRTC and llvm-objdump, the same for gfx90a. A missing tool is a skip.
//   ./gpu_sass_bench [--check]   (--check: exit 1 when a ratio is above the target)
// nvdisasm: on PATH, $QD_NVDISASM, the CUDA toolkit's bin/, or the nvidia-cuda-nvdisasm
// Python package; llvm-objdump: on PATH or $QD_LLVM_OBJDUMP.
#include <quadrants/quadrants.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "quadrants/backend/amdgpu/hiprtc.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"

namespace {

namespace fs = std::filesystem;
namespace cu = qd::backend::cuda;
namespace hip = qd::backend::amdgpu;

constexpr double target = 1.2;

// The hand-written kernels: what a CUDA programmer writes for a launch of any size
// (a grid-stride loop with 32-bit indices); HIP compiles the same text.
const char* hand_written = R"(
extern "C" __global__ void hand_saxpy(const float* x, float* y, float a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void hand_stencil(const float* in, float* out, int h, int w) {
  const int iw = w - 2, n = (h - 2) * iw;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += blockDim.x * gridDim.x) {
    const int i = k / iw, j = k % iw;
    const int c = (i + 1) * w + (j + 1);
    out[c] = 0.5f * in[c] + 0.125f * (in[c - w] + in[c + w] + in[c - 1] + in[c + 1]);
  }
}
extern "C" __global__ void hand_nbody(const float* pos, float* vel, const float* mass, float dt, float eps, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    const float px = pos[3 * i], py = pos[3 * i + 1], pz = pos[3 * i + 2];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int j = 0; j < n; ++j) {
      const float dx = pos[3 * j] - px, dy = pos[3 * j + 1] - py, dz = pos[3 * j + 2] - pz;
      const float r2 = dx * dx + dy * dy + dz * dz + eps;
      const float s = mass[j] / (r2 * sqrtf(r2));
      ax += dx * s, ay += dy * s, az += dz * s;
    }
    vel[3 * i] += ax * dt, vel[3 * i + 1] += ay * dt, vel[3 * i + 2] += az * dt;
  }
}
)";

// The same three kernels through Quadrants.
auto saxpy = qd::kernel("saxpy", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::f32 a) {
  qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = a * x[i] + y[i]; });
});
auto stencil = qd::kernel("stencil", [](qd::types::ndarray<float, 2> in, qd::types::ndarray<float, 2> out) {
  qd::range_for(qd::ndrange(in.shape(0) - 2, in.shape(1) - 2), [&](qd::i32 i, qd::i32 j) {
    out(i + 1, j + 1) =
        0.5f * in(i + 1, j + 1) + 0.125f * (in(i, j + 1) + in(i + 2, j + 1) + in(i + 1, j) + in(i + 1, j + 2));
  });
});
auto nbody = qd::kernel("nbody", [](qd::types::ndarray<qd::vec3f, 1> pos, qd::types::ndarray<qd::vec3f, 1> vel,
                                    qd::types::ndarray<float, 1> mass, qd::f32 dt, qd::f32 eps) {
  qd::range_for(pos.shape(0), [&](qd::i32 i) {
    qd::vec3f pi = pos[i];
    qd::var<qd::vec3f> acc = qd::vec3f(0.0f);
    qd::range_for(pos.shape(0), [&](qd::i32 j) {
      qd::vec3f d = pos[j] - pi;
      qd::f32 r2 = qd::dot(d, d) + eps;
      acc += d * (mass[j] / (r2 * qd::sqrt(r2)));
    });
    vel[i] += acc * dt;
  });
});

struct tool_output {
  int status = -1;
  std::string text;
};

tool_output run_tool(const std::string& command) {
  tool_output out;
  FILE* p = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), p)) > 0) out.text.append(buffer.data(), n);
  out.status = ::pclose(p);
  return out;
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

bool executable(const fs::path& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; }

fs::path find_tool(const char* name, const char* env, const std::vector<fs::path>& more) {
  if (const char* e = std::getenv(env); e != nullptr && executable(e)) return e;
  tool_output which = run_tool(fmt::format("command -v {}", name));
  if (which.status == 0 && !which.text.empty()) {
    std::string path = which.text.substr(0, which.text.find('\n'));
    if (executable(path)) return path;
  }
  for (const fs::path& p : more)
    if (executable(p)) return p;
  return {};
}

fs::path find_nvdisasm() {
  std::vector<fs::path> more;
  for (const char* e : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(e); v != nullptr) more.push_back(fs::path(v) / "bin" / "nvdisasm");
  more.push_back("/usr/local/cuda/bin/nvdisasm");
  // The nvidia-cuda-nvdisasm wheel (pip) installs it under nvidia/cu*/bin of site-packages.
  tool_output site = run_tool("python3 -c 'import nvidia, sys; sys.stdout.write(list(nvidia.__path__)[0])'");
  if (site.status == 0 && !site.text.empty()) {
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(site.text, ec)) more.push_back(d.path() / "bin" / "nvdisasm");
  }
  return find_tool("nvdisasm", "QD_NVDISASM", more);
}

void write_file(const fs::path& p, const std::vector<std::byte>& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Instructions per kernel: all of them, and those that are not NOP (the alignment padding).
struct count {
  int all = 0, real = 0;
};

// Instructions per kernel in a disassembly: a line matching `kernel` opens a kernel (its
// name the first group), one matching `instruction` is one of its instructions, padding if
// it holds one of `padding`.
std::map<std::string, count> counts_in(const std::string& disassembly, const std::regex& kernel,
                                       const std::regex& instruction, std::initializer_list<const char*> padding) {
  std::map<std::string, count> counts;
  std::istringstream lines(disassembly);
  std::string line, current;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, kernel)) {
      current = m[1];
    } else if (!current.empty() && std::regex_search(line, instruction)) {
      ++counts[current].all;
      bool pad = false;
      for (const char* p : padding) pad = pad || line.find(p) != std::string::npos;
      counts[current].real += pad ? 0 : 1;
    }
  }
  return counts;
}

// nvdisasm -c: one `.section .text.<kernel>` per kernel (its device functions inside),
// one `/*offset*/ OPCODE ... ;` line per instruction.
std::map<std::string, count> sass_counts(const fs::path& nvdisasm, const fs::path& cubin) {
  tool_output out = run_tool(fmt::format("{} -c {}", quoted(nvdisasm), quoted(cubin)));
  if (out.status != 0) return {};
  static const std::regex section(R"(^\s*\.section\s+\.text\.([A-Za-z0-9_$]+))");
  static const std::regex instruction(R"(^\s*/\*[0-9a-f]+\*/\s+[A-Z@!])");
  return counts_in(out.text, section, instruction, {" NOP"});
}

// llvm-objdump -d of a gfx90a code object: `<kernel>:` then one instruction a line
// (s_nop and s_code_end are padding).
std::map<std::string, count> gcn_counts(const fs::path& objdump, const fs::path& object) {
  tool_output out = run_tool(fmt::format("{} -d --mcpu=gfx90a {}", quoted(objdump), quoted(object)));
  if (out.status != 0) return {};
  static const std::regex symbol(R"(^[0-9a-f]+ <([A-Za-z0-9_$.]+)>:)");
  static const std::regex instruction(R"(^\s+[a-z_][a-z0-9_]*( |$).*//)");
  return counts_in(out.text, symbol, instruction, {"s_nop", "s_code_end"});
}

// The dumped whole-kernel program of `kernel` (print_ir) under `dump`.
std::string dumped_program(const fs::path& dump, const std::string& kernel, const char* extension) {
  return read_file(dump / kernel / "whole" / fmt::format("program.{}", extension));
}

// The one kernel of a module's counts (the generated modules hold one task each).
count only(const std::map<std::string, count>& counts) {
  count total;
  for (const auto& [name, c] : counts) total.all += c.all, total.real += c.real;
  return total;
}

void compile_generated(qd::arch arch, const fs::path& root) {
  qd::config c{.arch = arch,
               .offline_cache_file_path = (root / "cache").string(),
               .debug_dump_path = (root / "dump").string(),
               .print_ir = true,
               .compile_only = true,
               .enable_fallback = false};
  qd_bench::target_benchmark_gpu(c);
  qd::init(c);
  saxpy.compile();
  stencil.compile();
  nbody.compile();
  qd::reset();
}

struct row {
  const char* name;
  const char* kernel;  // the generated kernel's name
  const char* hand;    // the hand-written kernel's symbol
};
constexpr std::array<row, 3> rows = {{{"saxpy", "saxpy", "hand_saxpy"},
                                      {"5-point stencil (2-D ndrange)", "stencil", "hand_stencil"},
                                      {"N-body force loop", "nbody", "hand_nbody"}}};

// Prints the table; false when a ratio is above the target.
template <class CountsOf>
bool report(const char* isa, const std::map<std::string, count>& hand, CountsOf&& generated) {
  bool ok = true;
  fmt::print("  {:<30} {:>16} {:>16} {:>14}\n", fmt::format("{} instructions", isa), "generated", "hand-written",
             "ratio");
  for (const row& r : rows) {
    const count g = generated(r.kernel);
    const auto h = hand.find(r.hand);
    if (g.real == 0 || h == hand.end()) {
      fmt::print("  {:<30} not disassembled\n", r.name);
      ok = false;
      continue;
    }
    const double ratio = static_cast<double>(g.real) / h->second.real;
    ok = ok && ratio <= target;
    fmt::print("  {:<30} {:>6} ({:>3} all) {:>6} ({:>3} all) {:>8.2f}x (target <= {}, all {:.2f}x)\n", r.name, g.real,
               g.all, h->second.real, h->second.all, ratio, target, static_cast<double>(g.all) / h->second.all);
  }
  return ok;
}

bool cuda_part(const fs::path& root) {
  const fs::path nvdisasm = find_nvdisasm();
  if (nvdisasm.empty()) {
    fmt::print("CUDA: skipped, no nvdisasm (install the nvidia-cuda-nvdisasm Python package or set QD_NVDISASM)\n");
    return true;
  }
  try {
    compile_generated(qd::arch::cuda, root);
  } catch (const qd::error& e) {
    fmt::print("CUDA: skipped, NVRTC cannot compile here ({})\n", e.what());
    return true;
  }
  cu::nvrtc_options options;  // the backend's defaults: sm_90, -O2 (ptxas -O3), --fmad=false
  std::string flags;
  for (const auto& f : cu::nvrtc_flags(options)) flags += f + " ";
  fmt::print("CUDA sm_90, NVRTC {} ({}), {}\n", cu::nvrtc_version(), flags, nvdisasm.string());
  write_file(root / "hand.cubin", cu::compile_cubin(hand_written, options, "hand-written kernels"));
  const auto hand = sass_counts(nvdisasm, root / "hand.cubin");
  return report("SASS", hand, [&](const char* kernel) {
    const fs::path cubin = root / fmt::format("{}.cubin", kernel);
    write_file(cubin, cu::compile_cubin(dumped_program(root / "dump", kernel, "cu"), options, kernel));
    return only(sass_counts(nvdisasm, cubin));
  });
}

bool hip_part(const fs::path& root) {
  const fs::path objdump = find_tool("llvm-objdump", "QD_LLVM_OBJDUMP", {});
  if (objdump.empty()) {
    fmt::print("HIP: skipped, no llvm-objdump (set QD_LLVM_OBJDUMP)\n");
    return true;
  }
  hip::hiprtc_options options;
  std::vector<std::byte> hand_object;
  try {
    hand_object = hip::compile_code_object(hand_written, options, "hand-written kernels");
    compile_generated(qd::arch::amdgpu, root);
  } catch (const qd::error& e) {
    fmt::print("HIP: skipped, hipRTC cannot compile here ({})\n", e.what());
    return true;
  }
  std::string flags;
  for (const auto& f : hip::hiprtc_flags(options)) flags += f + " ";
  fmt::print("HIP gfx90a, hipRTC {} ({}), {}\n", hip::hiprtc_version(), flags, objdump.string());
  write_file(root / "hand.hsaco", hand_object);
  const auto hand = gcn_counts(objdump, root / "hand.hsaco");
  return report("gfx90a", hand, [&](const char* kernel) {
    const fs::path object = root / fmt::format("{}.hsaco", kernel);
    write_file(object, hip::compile_code_object(dumped_program(root / "dump", kernel, "hip"), options, kernel));
    return only(gcn_counts(objdump, object));
  });
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc > 1 && std::string(argv[1]) == "--check";
  qd::set_log_level(qd::log_level::warn);
  const fs::path root = fs::temp_directory_path() / fmt::format("qd-gpu-sass-{}", ::getpid());
  fs::create_directories(root);
  fmt::print(
      "Static GPU code of generated kernels against hand-written grid-stride CUDA (instructions, "
      "NOP padding excluded; 'all' counts it)\n");
  bool ok = cuda_part(root);
  ok = hip_part(root) && ok;
  std::error_code ec;
  if (std::getenv("QD_SASS_KEEP") == nullptr) fs::remove_all(root, ec);
  if (check && !ok) {
    fmt::print("FAILED: a kernel is above {}x its hand-written instructions\n", target);
    return 1;
  }
  return 0;
}
