// The per-backend suite (gpu_suite_test.cpp), continued: the third wave's language
// (short circuits, assertions, template arguments, arrays of structs) and its math,
// bit functions, integer division, atomics and narrow types, and the per-thread linear
// algebra, each against plain C++.
#include "backend/gpu_suite.hpp"
#include "backend/suite_kernels_lang.hpp"
#include "backend/suite_kernels_linalg.hpp"
#include "backend/suite_kernels_math.hpp"

// The third wave's language (SPEC §13.4-§13.6): backend/suite_kernels_lang.hpp.
QD_SUITE_CASE("suite: && and || skip their right operand's loads and atomics; C++ values keep their C++ type", A,
              on_cpu, on_reference, on_cuda, on_amdgpu, on_vulkan) {
  if (!start<A>({.check_out_of_bound = true})) return;
  lang_checks::check_short_circuit();
  lang_checks::check_literal_select();
}
QD_SUITE_CASE("suite: qd::assert_ under debug reports its message from the device", A, on_cpu, on_reference, on_cuda,
              on_amdgpu, on_vulkan) {
  if (!start<A>({.debug = true})) return;
  lang_checks::check_assertion();
}
QD_SUITE_CASE("suite: template arguments, arrays of structs in both layouts and vector indices", A, on_cpu,
              on_reference, on_cuda, on_amdgpu, on_vulkan) {
  if (!start<A>()) return;
  lang_checks::check_template_args();
  lang_checks::check_struct_arrays();
}
// Math, bits, integer division, atomics and narrow types (backend/suite_kernels_math.hpp),
// on the reference backend too: every backend against plain C++.
#define QD_SUITE_ARCHES_AND_REFERENCE on_cpu, on_reference, on_cuda, on_amdgpu, on_vulkan
QD_SUITE_CASE("suite: the third wave's math functions agree with <cmath> and Python's // and %", A,
              QD_SUITE_ARCHES_AND_REFERENCE) {
  if (!start<A>()) return;
  const int ulps = on_gpu<A>() ? 4 : 2;  // CUDA documents up to 4 ulp for tanf; the host's libm gives 1
  math_checks::check_math_more<float>(ulps);
  math_checks::check_math_more<double>(ulps);
  math_checks::check_vec_math();
}
QD_SUITE_CASE("suite: floordiv, floormod, sign, clamp and the bit counts of every integer type", A,
              QD_SUITE_ARCHES_AND_REFERENCE) {
  if (!start<A>()) return;
  math_checks::check_integer_functions<std::int32_t>(interesting_values<std::int32_t>());
  math_checks::check_integer_functions<std::int64_t>(interesting_values<std::int64_t>());
  math_checks::check_integer_functions<std::uint32_t>(interesting_values<std::uint32_t>());
  math_checks::check_integer_functions<std::uint64_t>(interesting_values<std::uint64_t>());
  math_checks::check_integer_functions<std::uint8_t>(interesting_values<std::uint8_t>());
  math_checks::check_integer_functions<std::int8_t>({0, 1, -1, 2, -2, 7, -7, 13, 100, 127, -128});
  math_checks::check_integer_functions<std::int16_t>({0, 1, -1, 3, -3, 255, -256, 1000, -1000, 32767, -32768});
  math_checks::check_integer_functions<std::uint16_t>({0, 1, 2, 3, 255, 256, 1000, 40000, 65535});
  math_checks::check_bit_casts();
}
QD_SUITE_CASE("suite: atomic mul, and, or, xor, exchange and cas return the old value for every element type", A,
              QD_SUITE_ARCHES_AND_REFERENCE) {
  if (!start<A>()) return;
  math_checks::check_atomics_more<std::int32_t>();
  math_checks::check_atomics_more<std::uint32_t>();
  math_checks::check_atomics_more<std::int64_t>();
  math_checks::check_atomics_more<std::uint64_t>();
  math_checks::check_atomics_more<float>();
  math_checks::check_atomics_more<double>();
  math_checks::check_atomics_more<std::int8_t>();
  math_checks::check_atomics_more<std::uint16_t>();
  math_checks::check_atomics_more<qd::half>();
  math_checks::check_vec_atomics();
  math_checks::check_float_cas_compares_bits_and_minmax_nan<float>();
  math_checks::check_float_cas_compares_bits_and_minmax_nan<double>();
}
QD_SUITE_CASE("suite: contended compare-and-swap loops, bitwise atomics and exchanges lose nothing", A,
              QD_SUITE_ARCHES_AND_REFERENCE) {
  if (!start<A>()) return;
  math_checks::check_atomic_contention();
}
QD_SUITE_CASE("suite: i8, i16, u16, u64 and f16 as arrays, scalars, variables, casts and atomics", A,
              QD_SUITE_ARCHES_AND_REFERENCE) {
  if (!start<A>()) return;
  math_checks::check_narrow_types();
  math_checks::check_f16_rounding();
  check_copy_scale_all_ranks<std::int8_t>();
  check_copy_scale_all_ranks<std::int16_t>();
  check_copy_scale_all_ranks<std::uint16_t>();
  check_copy_scale_all_ranks<std::uint64_t>();
  check_copy_scale_all_ranks<qd::half>();
  check_histogram<std::int16_t>();
  check_histogram<std::uint64_t>();
  check_histogram<qd::half>();
}

// Per-thread linear algebra (SPEC §13.7): backend/suite_kernels_linalg.hpp.
QD_SUITE_CASE("suite: per-thread svd, polar_decompose, sym_eig, make_spd and solve in f32 and f64", A,
              QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  linalg_checks::check_linalg();
}
