// Implementation of runtime/compile_all.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

#include "quadrants/runtime/compile_all.hpp"
#include "quadrants/runtime/compile_progress.hpp"
#include "quadrants/runtime/pipeline/dispatch.hpp"
#include "quadrants/runtime/pipeline/kernel_registry.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0 {

QD_FUNC void compile_all() {
  detail::program_use use(std::nothrow);
  if (!use) detail::throw_not_initialized("qd::compile_all");
  const std::uint64_t id = use->id();
  std::vector<std::shared_ptr<detail::kernel_state>> kernels;
  for (auto& k : detail::live_kernels())
    if (k->ready_program.load(std::memory_order_acquire) != id) kernels.push_back(std::move(k));
  if (kernels.empty()) return;
  // Traced first (the user's lambdas, one at a time): the constructs to compile, for the progress.
  std::vector<std::exception_ptr> failures(kernels.size());
  std::vector<std::size_t> constructs(kernels.size(), 0);
  std::size_t total = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    try {
      std::lock_guard lock(kernels[i]->mutex);
      detail::ensure_traced(*kernels[i]);
      constructs[i] = std::max<std::size_t>(1, kernels[i]->structure.constructs.size());
      total += constructs[i];
    } catch (...) {
      failures[i] = std::current_exception();
    }
  }
  detail::compile_progress progress(total, kernels.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    detail::program_use held(std::nothrow);
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < kernels.size();) {
      if (failures[i]) continue;
      try {
        detail::compile(*kernels[i]);
      } catch (...) {
        failures[i] = std::current_exception();
      }
      progress.kernel_done(constructs[i]);
    }
  };
  const auto threads =
      std::min<std::size_t>(kernels.size(), static_cast<std::size_t>(std::max(1, use->config().num_compile_threads)));
  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < threads; ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
  progress.finish();
  for (auto& f : failures)
    if (f) std::rethrow_exception(f);
}

}  // namespace qd::inline v0
