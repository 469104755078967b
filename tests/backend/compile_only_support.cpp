// The compile-only round trips' kernel list and check (compile_only_support.hpp),
// compiled once for the tests that link qd_test_compile_only.
#include "backend/compile_only_support.hpp"

#include "backend/suite_kernels.hpp"
#include "backend/suite_kernels_lang.hpp"
#include "backend/suite_kernels_linalg.hpp"
#include "backend/suite_kernels_math.hpp"
#include "backend/suite_kernels_vec.hpp"

namespace qd_test {

std::vector<compiled_kernel_result> compile_suite_kernels() {
  namespace k = qd_test::kernels;
  std::vector<compiled_kernel_result> out;
  auto add = [&](std::string label, const auto& kernel) {
    kernel.compile();
    out.push_back({std::move(label), kernel.per_offload_cache_observations()});
  };
  add("integer_operators<i32>", k::integer_operators<std::int32_t>());
  add("integer_operators<i64>", k::integer_operators<std::int64_t>());
  add("integer_operators<u32>", k::integer_operators<std::uint32_t>());
  add("integer_operators<u8>", k::integer_operators<std::uint8_t>());
  add("float_operators<f32>", k::float_operators<float>());
  add("float_operators<f64>", k::float_operators<double>());
  add("math_functions<f32>", k::math_functions<float>());
  add("math_functions<f64>", k::math_functions<double>());
  add("casts", k::casts());
  add("variables", k::variables());
  add("ndranges", k::ndranges());
  add("ranges", k::ranges());
  add("branches", k::branches());
  add("wide_bounds", k::wide_bounds());
  add("overflow_compare", k::overflow_compare());
  add("nested_loops", k::nested_loops());
  add("serial_control_flow", k::serial_control_flow());
  add("atomics_serial", k::atomics_serial());
  add("atomics_parallel", k::atomics_parallel());
  add("compaction", k::compaction());
  add("histogram<i32>", k::histogram<std::int32_t>());
  add("histogram<u32>", k::histogram<std::uint32_t>());
  add("histogram<i64>", k::histogram<std::int64_t>());
  add("histogram<u8>", k::histogram<std::uint8_t>());
  add("histogram<f32>", k::histogram<float>());
  add("histogram<f64>", k::histogram<double>());
  add("uniforms", k::uniforms());
  add("print_serial", k::print_serial());
  add("print_parallel", k::print_parallel());
  add("volatile_reads", k::volatile_reads());
  add("clamped", k::clamped());
  add("gradients", k::gradients());
  add("scalars", k::scalars());
  add("out_of_bounds", k::out_of_bounds());
  add("running_total", k::running_total());
  add("stale_snapshot", k::stale_snapshot());
  add("bounds_from_arrays", k::bounds_from_arrays());
  add("relay", k::relay());
  add("forty_values", k::forty_values());
  add("shared_draw", k::shared_draw());
  add("serial_between_loops", k::serial_between_loops());
  add("bound_from_var", k::bound_from_var());
  add("nan_bounds", k::nan_bounds());
  add("nan_reduction", k::nan_reduction());
  add("assign_then_add", k::assign_then_add());
  add("split_many_values", k::split_many_values());
  add("energy", k::energy());
  add("seed_running_total", k::seed_running_total());
  add("seed_stale_snapshot", k::seed_stale_snapshot());
  add("seed_stale_clamped", k::seed_stale_clamped());
  add("seed_grad_snapshot", k::seed_grad_snapshot());
  add("copy_after_snapshot", k::copy_after_snapshot());
  add("vec_ops", k::vec_ops());
  add("mat_ops", k::mat_ops());
  add("linalg", k::linalg());
  add("vec_vars", k::vec_vars());
  add("vec_elements", k::vec_elements());
  add("mixed_updates", k::mixed_updates());
  add("vec_params", k::vec_params());
  add("loop_control", k::loop_control());
  add("returns", k::returns());
  add("struct_step", k::struct_step());
  add("adjoint_chain", k::adjoint_chain());
  add("adjoint_chain.grad", k::adjoint_chain().grad);  // an adjoint: always whole (autodiff)
  add("graph_loops", k::graph_loops());
  add("concurrent_regions", k::concurrent_regions());
  add("mesh_laplacian", k::mesh_laplacian());
  add("short_circuit", k::short_circuit());
  add("literal_select", k::literal_select());
  add("checked_sqrt", k::checked_sqrt());  // its assertion is compiled in the passes with debug
  add("bodies", k::bodies());
  {
    auto substeps = k::substeps();
    substeps.compile(2);
    out.push_back({"substeps<2>", substeps.per_offload_cache_observations()});
  }
  add("math_more<f32>", k::math_more<float>());
  add("math_more<f64>", k::math_more<double>());
  add("integer_functions<i32>", k::integer_functions<std::int32_t>());
  add("integer_functions<u64>", k::integer_functions<std::uint64_t>());
  add("integer_functions<i8>", k::integer_functions<std::int8_t>());
  add("integer_functions<u16>", k::integer_functions<std::uint16_t>());
  add("bit_casts", k::bit_casts());
  add("vec_math", k::vec_math());
  add("atomics_more<i32>", k::atomics_more<std::int32_t>());
  add("atomics_more<u64>", k::atomics_more<std::uint64_t>());
  add("atomics_more<f32>", k::atomics_more<float>());
  add("atomics_more<f64>", k::atomics_more<double>());
  add("atomics_more<i8>", k::atomics_more<std::int8_t>());
  add("atomics_more<f16>", k::atomics_more<qd::half>());
  add("atomic_contention", k::atomic_contention());
  add("vec_atomics", k::vec_atomics());
  add("narrow_types", k::narrow_types());
  add("f16_rounding", k::f16_rounding());
  return out;
}

void check_compile_only_round_trip(qd::config target, const compile_only_pass& pass, const std::string& cache) {
  target.offline_cache_file_path = cache;
  target.per_offload = pass.per_offload;
  target.check_out_of_bound = pass.bounds_checks;
  target.debug = pass.bounds_checks;  // qd::assert_ compiled in (debug turns bounds checks on too)
  target.compile_only = true;
  target.enable_fallback = false;
  const bool split = pass.per_offload == qd::per_offload_mode::on;

  qd::init(target);
  auto cold = compile_suite_kernels();
  auto stats = qd::offline_cache_statistics();
  CHECK(stats.compiles > 0);
  CHECK(stats.hits == 0);
  // Each kernel stores at least one record and its module(s).
  CHECK(stats.stores >= 2 * cold.size());
  int split_kernels = 0;
  for (const auto& r : cold) {
    CAPTURE(r.name);
    CAPTURE(r.observations.fallback_detail);
    CHECK(r.observations.constructs_loaded == 0);
    if (r.observations.fallback == qd::fallback_reason::none) {
      ++split_kernels;
      CHECK(split);
      // A construct another kernel already compiled in this program counts as neither.
      CHECK(r.observations.constructs_compiled <= r.observations.frontend_constructs_total);
    } else {
      CHECK(r.observations.frontend_constructs_total == -1);
      CHECK(r.observations.constructs_compiled >= 1);
    }
  }
  if (split)
    CHECK(split_kernels >= 20);
  else
    CHECK(split_kernels == 0);

  qd::init(target);  // a new program: nothing in memory, everything on disk
  auto warm = compile_suite_kernels();
  auto again = qd::offline_cache_statistics();
  CHECK(again.compiles == 0);
  CHECK(again.hits > 0);
  REQUIRE(warm.size() == cold.size());
  for (std::size_t i = 0; i < warm.size(); ++i) {
    CAPTURE(warm[i].name);
    CHECK(warm[i].observations.constructs_compiled == 0);
    // A split kernel's tasks may all be reused from a kernel loaded before it (identical
    // tasks share one entry): neither compiled nor loaded. A kernel that stays whole (an adjoint) loads its tasks.
    if (split && warm[i].observations.fallback == qd::fallback_reason::none)
      CHECK(warm[i].observations.constructs_loaded <= warm[i].observations.frontend_constructs_total);
    else
      CHECK(warm[i].observations.constructs_loaded >= 1);
    // tasks share one entry): neither compiled nor loaded.
    // A compile-time fallback (concurrent_regions) loads its whole kernel in either pass.
    if (split && warm[i].observations.fallback == qd::fallback_reason::none)
      CHECK(warm[i].observations.constructs_loaded <= warm[i].observations.frontend_constructs_total);
    else
      CHECK(warm[i].observations.constructs_loaded >= 1);
    CHECK(warm[i].observations.fallback == cold[i].observations.fallback);
  }
  qd::reset();
}

}  // namespace qd_test
