// The fuzzer's machinery compiled once, into qd_fuzz_support (tests/fuzz/tests.cmake):
// the functions its headers define under QD_FUZZ_IMPLEMENTATION (the generator, the
// runs and checks, the shrinker, the case files), which every fuzz program and
// analysis/atomic_demotion would otherwise each compile (30-40 s apiece at -O3).
#define QD_FUZZ_IMPLEMENTATION 1
#include "fuzz/differential.hpp"
#include "fuzz/fuzz_case.hpp"
#include "fuzz/kernel_generator.hpp"
#include "fuzz/shrink.hpp"
