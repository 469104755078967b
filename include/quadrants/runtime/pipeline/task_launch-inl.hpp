// Implementation of runtime/pipeline/task_launch.hpp.
#pragma once

#include <cstdint>
#include <string>

#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/mesh.hpp"
#include "quadrants/runtime/pipeline/program.hpp"
#include "quadrants/runtime/pipeline/task_launch.hpp"

namespace qd::inline v0::detail {

QD_FUNC void throw_launch_error(const kernel_state& k, std::size_t param, std::string_view what) {
  throw user_error(fmt::format("kernel '{}', {}: {}", k.name, param_label(k, param), what));
}

QD_FUNC std::uint64_t mix_stream(std::uint64_t seed, std::uint64_t launch, std::uint64_t salt) {
  auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  return mix(seed ^ mix(launch * 0x9e3779b97f4a7c15ull ^ mix(salt + 1)));
}

QD_FUNC void launch_task(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                         const compiled_task& t, const launch_arg* args, std::uint64_t launch_no, std::uint64_t pass,
                         task_buffers& buffers, backend::launch_queue* queue) {
  backend::array_abi* arrays = buffers.arrays;
  std::uint64_t* scalars = buffers.scalars;
  std::int64_t* error = buffers.error;
  {
    const std::size_t n = t.param_map.size();
    for (std::size_t j = 0; j < n; ++j) {
      const auto kp = static_cast<std::size_t>(t.param_map[j]);
      const launch_arg& a = args[kp];
      if (k.params[kp].is_array) {
        arrays[j].data = a.data;
        arrays[j].grad = a.grad;
        for (int d = 0; d < limits::max_ndim; ++d) arrays[j].shape[d] = a.shape[d];
      } else {
        scalars[j] = a.scalar_bits;
      }
    }
    // A do_while's later passes (pass > 0) draw from streams of their own.
    backend::launch_context ctx{
        arrays,
        scalars,
        n,
        static_cast<unsigned char*>(v.temps),
        mix_stream(p.config().random_seed, launch_no, t.rng_salt + pass * 0x9e3779b97f4a7c15ull),
        error,
        c.bounds_checks,
        c.wide_bounds,
        t.block_dim,
        queue};
    v.device->launch(t.entry, t.parallel, ctx);
    // The CPU and the reference backend always fill the record; a GPU brings it back
    // (a synchronization) when bounds checks are on or the kernel has wide loop bounds.
    if (error[0] == 2)
      throw user_error(
          fmt::format("kernel '{}': a qd::range_for bound is {}, which does not fit in qd::i32; loop "
                      "indices are 32-bit, so that loop ran no iterations. Split the iteration space "
                      "into loops of at most 2147483647 iterations",
                      k.name, error[3]));
    if (error[0] == 1 && error[1] < 0) throw user_error(assertion_failure(k, error[3]));  // qd::assert_
    if (error[0] != 0) {
      std::size_t param = static_cast<std::size_t>(t.param_map[static_cast<std::size_t>(error[1])]);
      if (std::string mesh = mesh_index_error(k, param, error[3], error[4], t.construct); !mesh.empty())
        throw user_error(mesh);
      throw_launch_error(k, param,
                         fmt::format("index {} is out of range for dimension {} (extent {}){}{}; out-of-range "
                                     "accesses were skipped (check_out_of_bound is on)",
                                     error[3], error[2], error[4],
                                     t.construct >= 0 ? " in " + construct_label(k, t.construct) : std::string(),
                                     access_sites(k, param, t.construct)));
    }
  }
}

}  // namespace qd::inline v0::detail
