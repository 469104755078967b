// The fuzzer's kernels, differentiated (issue 12): generated kernels with their gradient
// accesses and volatile reads made plain. Each one's adjoint is either refused with a
// qd::user_error (never another error), or built, verified, and run on the reference
// backend and, for some, on the CPU; the two must agree (to rounding: on the CPU float
// atomics accumulate in any order). A sample also compiles for sm_90 (NVRTC) and gfx90a
// (hipRTC) in compile-only mode, where those compilers are installed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include <quadrants/autodiff/adjoint.hpp>
#include <quadrants/ir/verify.hpp>

#include "fuzz/differential.hpp"
#include "fuzz/kernel_generator.hpp"

namespace {

// Equal integers; floats equal to 1e-3 relative (or both NaN, or the same infinity).
bool close(const qd_fuzz::fuzz_case& c, const qd_fuzz::outcome& a, const qd_fuzz::outcome& b, std::string& why) {
  if (a.error != b.error) {
    why = "errors differ: '" + a.error + "' vs '" + b.error + "'";
    return false;
  }
  std::size_t m = 0;
  for (std::size_t buf = 0; buf < c.buffers.size(); ++buf) {
    const auto& s = c.buffers[buf];
    const auto size = static_cast<std::size_t>(qd::size_of(s.type));
    for (int copy = 0; copy < (s.grad ? 2 : 1); ++copy, ++m) {
      for (std::size_t e = 0; e * size < a.memory[m].size(); ++e) {
        const unsigned char* x = a.memory[m].data() + e * size;
        const unsigned char* y = b.memory[m].data() + e * size;
        if (std::memcmp(x, y, size) == 0) continue;
        double f = 0, g = 0;
        if (s.type == qd::dtype::f32) {
          float ff, gg;
          std::memcpy(&ff, x, 4), std::memcpy(&gg, y, 4);
          f = ff, g = gg;
        } else if (s.type == qd::dtype::f64) {
          std::memcpy(&f, x, 8), std::memcpy(&g, y, 8);
        } else {
          why = "buffer " + std::to_string(buf) + ", element " + std::to_string(e) + " differs";
          return false;
        }
        if ((std::isnan(f) && std::isnan(g)) || f == g) continue;
        if (std::isfinite(f) && std::isfinite(g) && std::abs(f - g) <= 1e-3 * std::max({1.0, std::abs(f), std::abs(g)}))
          continue;
        why = "buffer " + std::to_string(buf) + (copy ? " (gradient)" : "") + ", element " + std::to_string(e) + ": " +
              std::to_string(f) + " vs " + std::to_string(g);
        return false;
      }
    }
  }
  return true;
}

// The refusal's kind, from its message, for the figures.
std::string kind_of(const std::string& message) {
  for (const char* k : {"qd::while_", "qd::random", "global data access rule", "the accumulation into",
                        "iterations of this parallel qd::range_for", "whose iterations may write the same",
                        "atomic_min", "atomic_max", "returns is used", "has no qd::needs_grad parameter", "a race",
                        "has no adjoint", "has no derivative", "multi-dimensional", "only atomic add"})
    if (message.find(k) != std::string::npos) return k;
  return "other: " + message.substr(0, 120);
}

}  // namespace

TEST_CASE("generated kernels: every adjoint is refused cleanly or agrees between the reference backend and the CPU") {
  std::map<std::string, int> refused;
  std::vector<qd_fuzz::fuzz_case> for_gpus;
  int built = 0, ran = 0, on_cpu = 0, skipped = 0;
  for (std::uint64_t seed = 1; seed <= 1500; ++seed) {
    qd_fuzz::fuzz_case c = qd_fuzz::generate(seed);
    if (c.aliased()) {  // two parameters bound to one buffer: gradients through them are not defined
      ++skipped;
      continue;
    }
    c.struct_kind = 0;  // gradients change the parameters: the typed struct call no longer fits
    for (auto& n : c.fn.nodes)
      n.flags = static_cast<std::uint8_t>(n.flags & ~(qd::ir::access::grad | qd::ir::access::is_volatile));
    // Every f32 and f64 array needs a gradient, seeded with a pattern of small values
    // (f16 arrays stay without: the generator's narrow types).
    for (std::size_t p = 0; p < c.fn.params.size(); ++p) {
      auto& d = c.fn.params[p];
      if (!d.is_array || (d.type != qd::dtype::f32 && d.type != qd::dtype::f64)) continue;
      d.needs_grad = true;
      auto& b = c.buffers[static_cast<std::size_t>(c.buffer_of[p])];
      b.grad = true;
      b.grad_data.assign(b.bytes(), 0);
      for (std::int64_t e = 0; e < b.elements(); ++e) {
        const double v = 0.25 + 0.125 * static_cast<double>(e % 5);
        if (d.type == qd::dtype::f32) {
          const auto f = static_cast<float>(v);
          std::memcpy(b.grad_data.data() + e * 4, &f, 4);
        } else {
          std::memcpy(b.grad_data.data() + e * 8, &v, 8);
        }
      }
    }
    qd::ir::function forward = c.fn;
    qd::ir::eliminate_dead_code(forward);
    qd::ir::function adjoint;
    try {
      adjoint = qd::autodiff::make_adjoint(forward, {c.name, {}});
    } catch (const qd::user_error& e) {
      ++refused[kind_of(e.what())];
      continue;
    } catch (const std::exception& e) {
      FAIL_CHECK("seed " << seed << ": not a qd::user_error: " << e.what());
      continue;
    }
    ++built;
    CAPTURE(seed);
    qd::ir::eliminate_dead_code(adjoint);
    CHECK_NOTHROW(qd::ir::verify(adjoint, qd::ir::stage::traced));
    qd_fuzz::fuzz_case a = c;
    a.fn = adjoint;
    a.name = c.name + "_grad";
    const qd_fuzz::outcome reference = qd_fuzz::run(a, qd::arch::reference, qd_fuzz::variant::whole);
    if (!reference.error.empty()) continue;  // the generated inputs index out of range: not the adjoint's doing
    ++ran;
    if (built % 4 != 0) continue;  // the CPU and the GPU compilers compile each: a sample
    if (for_gpus.size() < 12) for_gpus.push_back(a);
    ++on_cpu;
    const qd_fuzz::outcome cpu = qd_fuzz::run(a, qd::arch::cpu, qd_fuzz::variant::whole);
    std::string why;
    CHECK_MESSAGE(close(a, reference, cpu, why), "seed " << seed << ": " << why << "\n" << qd_fuzz::to_file_text(a));
  }
  std::string figures;
  for (const auto& [k, n] : refused) figures += "  refused (" + k + "): " + std::to_string(n) + "\n";
  MESSAGE("adjoints built " << built << ", run on the reference " << ran << ", also on the CPU " << on_cpu
                            << ", aliased cases skipped " << skipped << "\n"
                            << figures);
  for (const auto& [target, r] : qd_fuzz::compile_for_gpus(for_gpus, false)) {
    if (r.skipped) {
      MESSAGE("skipped on " << target << ": the compiler library is not installed");
      continue;
    }
    MESSAGE(r.compiled << " adjoints compiled for " << target << " in compile-only mode");
    for (const auto& failure : r.failures) FAIL_CHECK(target << ": " << failure);
  }
  CHECK(built > 60);
  CHECK(on_cpu > 10);
  for (const auto& entry : refused) CHECK_MESSAGE(entry.first.rfind("other", 0) != 0, entry.first);
}
