// The differential fuzzer's fixed-seed batch (docs/testing.md): 2,000 generated kernels
// run whole, split, unchecked-split and as written on the reference backend, and 90 more
// (20 of them rich in SPEC §11's language, 20 in §13's) also whole and split on the CPU;
// every comparison is bitwise.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/differential.hpp"
#include "fuzz/kernel_generator.hpp"
#include "fuzz/shrink.hpp"

namespace {

// In a sanitizer tree (QD_FUZZ_SAMPLE=n, tests/fuzz/tests.cmake) the batches shrink to a
// sample: n reference kernels and 5 on the CPU. What the sanitizers add is the library
// instrumented under generated kernels; the CPU batches' cost is the host compiler, which is
// not instrumented, and the full batches with their coverage checks run in the main tree.
int sample_size() {
  const char* s = std::getenv("QD_FUZZ_SAMPLE");
  return s != nullptr && *s != '\0' ? std::atoi(s) : 0;
}

// A finding fails the test with the shrunk case in the file form of tests/fuzz/regressions.
void report(const qd_fuzz::fuzz_case& c, const qd_fuzz::case_report& r, int opt_level) {
  qd_fuzz::fuzz_case small = c;
  if (r.what != qd_fuzz::finding::invalid_kernel)
    small = qd_fuzz::shrink(
        c, [&](const qd_fuzz::fuzz_case& x) { return qd_fuzz::still_shows(x, r.what, opt_level); }, 300);
  small.note = c.note + "; finding: " + qd_fuzz::name(r.what) + "\n" + r.detail;
  FAIL_CHECK(c.name << ": " << qd_fuzz::name(r.what) << ": " << r.detail
                    << "\nshrunk (save it as tests/fuzz/regressions/<what>.qdfuzz):\n"
                    << qd_fuzz::to_file_text(small));
}

qd_fuzz::figures run_batch(std::uint64_t first_seed, int count, bool cpu, const qd_fuzz::generator_options& g = {}) {
  qd_fuzz::figures f;
  for (int k = 0; k < count; ++k) {
    const qd_fuzz::fuzz_case c = qd_fuzz::generate(first_seed + static_cast<std::uint64_t>(k), g);
    qd_fuzz::check_options o;
    o.cpu = cpu;
    o.opt_level = k % 4;  // every opt level, so vectorised code meets NaN and out-of-range casts too
    const qd_fuzz::case_report r = qd_fuzz::check(c, o);
    f.add(c, r);
    if (r.what != qd_fuzz::finding::none) report(c, r, o.opt_level);
  }
  return f;
}

// The first 4 kernels of a batch also compile, whole and split, for sm_90 (NVRTC) and
// gfx90a (hipRTC) in compile-only mode where those compilers are installed.
void compile_sample_for_gpus(std::uint64_t first_seed, const qd_fuzz::generator_options& g) {
  std::vector<qd_fuzz::fuzz_case> sample;
  for (std::uint64_t seed = first_seed; seed < first_seed + 4; ++seed) sample.push_back(qd_fuzz::generate(seed, g));
  for (const auto& [target, r] : qd_fuzz::compile_for_gpus(sample, true)) {
    if (r.skipped) {
      MESSAGE("skipped on " << target << ": the compiler library is not installed");
      continue;
    }
    MESSAGE(r.compiled << " compiled for " << target << " in compile-only mode");
    for (const auto& failure : r.failures) FAIL_CHECK(target << ": " << failure);
  }
}

// 20 kernels from `first_seed` with `g`, on the CPU too: no mismatch, each feature bit in
// [first_bit, end_bit) used, and the first 4 compiled for the GPUs.
void check_rich_batch(const char* what, std::uint64_t first_seed, const qd_fuzz::generator_options& g, int first_bit,
                      int end_bit) {
  if (sample_size() > 0) {
    MESSAGE("not in a sanitizer tree's sample: the CPU batch of " << std::string(what) << " (the main tree runs it)");
    return;
  }
  const qd_fuzz::figures f = run_batch(first_seed, 20, true, g);
  MESSAGE("CPU batch of " << std::string(what) << " (seeds " << first_seed << ".." << first_seed + 19 << "):\n"
                          << f.text());
  CHECK(f.cpu_kernels == 20);
  CHECK(f.mismatches() == 0);
  for (int b = first_bit; b < end_bit; ++b) {
    CAPTURE(qd_fuzz::feature::name(b));
    CHECK(f.with_feature[static_cast<std::size_t>(b)] > 0);
  }
  compile_sample_for_gpus(first_seed, g);
}

}  // namespace

TEST_CASE("the generator is deterministic, and a case survives its file form") {
  for (std::uint64_t seed : {1u, 2u, 77u}) {
    const qd_fuzz::fuzz_case a = qd_fuzz::generate(seed), b = qd_fuzz::generate(seed);
    CHECK(qd::ir::canonical_bytes(a.fn) == qd::ir::canonical_bytes(b.fn));
    const std::string text = qd_fuzz::to_file_text(a);
    qd_fuzz::fuzz_case back = qd_fuzz::from_file_text(text);
    back.note = a.note;  // a comment in the file
    CHECK(qd_fuzz::to_file_text(back) == text);
    CHECK(back.buffer_of == a.buffer_of);
    CHECK(back.scalar_bits == a.scalar_bits);
  }
  CHECK_THROWS(qd_fuzz::from_file_text("qdfuzz 1\nnode nonsense\nend\n"));
  // A struct case keeps its kind (its calls go through the typed kernel).
  std::uint64_t seed = 1;
  while (qd_fuzz::generate(seed).struct_kind == 0) ++seed;
  const qd_fuzz::fuzz_case s = qd_fuzz::generate(seed);
  CHECK(qd_fuzz::from_file_text(qd_fuzz::to_file_text(s)).struct_kind == s.struct_kind);
}

TEST_CASE("the shrinker's copy of an unedited case is the same IR, and a dropped statement shrinks it") {
  for (std::uint64_t seed : {3u, 4u, 5u, 6u}) {
    const qd_fuzz::fuzz_case c = qd_fuzz::generate(seed);
    qd::ir::function live = c.fn;
    qd::ir::eliminate_dead_code(live);
    const qd::ir::function copy = qd_fuzz::apply(c.fn, {});
    CHECK(qd::ir::canonical_bytes(copy) == qd::ir::canonical_bytes(live));
    const qd::ir::function dropped = qd_fuzz::apply(copy, {qd_fuzz::edit::drop, copy.block(0).back()});
    CHECK(dropped.block(0).size() < copy.block(0).size());
  }
}

TEST_CASE("the struct kinds: the generator declares the parameters qd::kernel reflects from each struct") {
  for (int kind = 1; kind <= qd_fuzz::structs::kinds; ++kind) {
    CAPTURE(kind);
    std::vector<qd::ir::param_desc> declared;
    for (const auto& l : qd_fuzz::structs::leaves(kind)) declared.push_back(l.desc);
    CHECK(declared == qd_fuzz::structs::reflected_descs(kind));
  }
}

TEST_CASE("2,000 generated kernels: the split gives the whole kernel's results on the reference backend") {
  if (const int n = sample_size(); n > 0) {
    const qd_fuzz::figures f = run_batch(1, n, false);
    MESSAGE("reference sample (seeds 1.." << n << "):\n" << f.text());
    CHECK(f.kernels == n);
    CHECK(f.mismatches() == 0);
    return;
  }
  const qd_fuzz::figures f = run_batch(1, 2000, false);
  MESSAGE("reference batch (seeds 1..2000):\n" << f.text());
  CHECK(f.kernels == 2000);
  CHECK(f.mismatches() == 0);
  // The batch exercises what it claims to: splits, every fallback, aliased calls and
  // their run-time fallbacks, comparisons with the kernel as written.
  // Since the persisted buffer (issue 15) nearly every kernel splits; of what still
  // falls back at compile time, at most 10% may be unnecessary.
  CHECK(f.split_ran > f.kernels * 9 / 10);
  CHECK(f.unnecessary * 10 <= f.compile_time_fallbacks);
  CHECK(f.persisted > f.kernels / 5);
  CHECK(f.persisted_variable > 0);
  CHECK(f.persisted_snapshot > 0);
  CHECK(f.persisted_draw > 0);
  CHECK(f.aliased_calls > 100);
  CHECK(f.runtime_fallbacks > 0);
  CHECK(f.source_checked > f.kernels / 3);
  // The second wave's language is generated (each feature in some kernels of the batch).
  for (int b = 0; b < qd_fuzz::feature::count; ++b) {
    CAPTURE(qd_fuzz::feature::name(b));
    CHECK(f.with_feature[static_cast<std::size_t>(b)] > 0);
  }
}

TEST_CASE("50 generated kernels: whole and split on the CPU give the reference backend's results") {
  if (sample_size() > 0) {
    const qd_fuzz::figures f = run_batch(1000001, 5, true);
    MESSAGE("CPU sample (seeds 1000001..1000005):\n" << f.text());
    CHECK(f.cpu_kernels == 5);
    CHECK(f.mismatches() == 0);
    return;
  }
  const qd_fuzz::figures f = run_batch(1000001, 50, true);
  MESSAGE("CPU batch (seeds 1000001..1000050):\n" << f.text());
  CHECK(f.cpu_kernels == 50);
  CHECK(f.mismatches() == 0);
  CHECK(f.split_ran > 40);
  CHECK(f.persisted > 5);
}

TEST_CASE(
    "20 generated kernels rich in vectors, structs, returns and loop control: the CPU gives the reference's results") {
  qd_fuzz::generator_options g;
  g.vector_chance = 1.0;
  g.vector_array_chance = 0.8;
  g.struct_chance = 0.3;
  g.return_chance = 0.5;
  g.jump_chance = 1.0;
  g.loop_config_chance = 0.4;
  check_rich_batch("the second wave's language", 2000001, g, 0, qd_fuzz::feature::second_wave_count);
}

TEST_CASE(
    "20 generated kernels rich in the third wave's math, atomics, narrow types and short-circuit: the CPU gives the "
    "reference's results") {
  qd_fuzz::generator_options g;
  g.math_chance = 1.0;
  g.atomics_chance = 1.0;
  g.narrow_types_chance = 0.8;
  g.short_circuit_chance = 1.0;
  check_rich_batch("the third wave's language", 3000001, g, qd_fuzz::feature::second_wave_count,
                   qd_fuzz::feature::count);
}
