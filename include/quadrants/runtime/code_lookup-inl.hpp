// Implementation of runtime/code_lookup.hpp.
#pragma once

#include <chrono>
#include <exception>
#include <thread>

#include "quadrants/base/error.hpp"
#include "quadrants/base/log.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/runtime/code_lookup.hpp"

namespace qd::detail {

QD_FUNC std::shared_ptr<backend::loaded_module> load_cached_module(program& p, const cache::key& module_key,
                                                                   const std::string& what) {
  if (auto m = p.find_module(module_key)) return m;
  if (!p.store()) return nullptr;
  auto binary = p.store()->load(cache::entry_kind::module, module_key);
  if (!binary) return nullptr;
  std::shared_ptr<backend::loaded_module> m;
  try {
    m = p.device().load(*binary, what);
  } catch (const error& e) {
    // A validated entry that does not load (another library version's object?) is a miss.
    log_fmt(log_level::warn, "{}: a cached module did not load ({}); recompiling", what, e.what());
    p.store()->discard(cache::entry_kind::module, module_key, *binary);  // not decoded again before the compile
    return nullptr;
  }
  p.remember_module(module_key, m);
  return m;
}

QD_FUNC module_result compile_module(program& p, const std::string& source, const cache::key& module_key,
                                     const std::string& what) {
  // The flock is released even if its holder dies.
  cache::store::compile_lock lock;
  if (p.store()) {
    lock = p.store()->lock_for_compile(module_key, std::chrono::seconds(120));
    if (auto m = load_cached_module(p, module_key, what)) return {m, false};
  }
  auto t0 = std::chrono::steady_clock::now();
  auto binary = p.device().compile(source, what);
  std::shared_ptr<backend::loaded_module> m = p.device().load(binary, what);
  p.compiles.fetch_add(1, std::memory_order_relaxed);
  log_fmt(log_level::debug, "{}: compiled in {:.1f} ms", what,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  if (p.store()) p.store()->save(cache::entry_kind::module, module_key, binary);
  p.remember_module(module_key, m);
  return {m, true};
}

QD_FUNC std::vector<module_result> compile_modules(program& p, const std::vector<std::string>& sources,
                                                   const std::vector<cache::key>& module_keys,
                                                   const std::string& what) {
  const std::size_t n = sources.size();
  std::vector<module_result> modules(n);
  std::vector<std::exception_ptr> failures(n);
  auto one = [&](std::size_t g) {
    try {
      modules[g].module = load_cached_module(p, module_keys[g], what);  // another process may have built it
      if (!modules[g].module) modules[g] = compile_module(p, sources[g], module_keys[g], what);
    } catch (...) {
      failures[g] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  for (std::size_t g = 1; g < n; ++g) workers.emplace_back(one, g);
  if (n > 0) one(0);
  for (auto& w : workers) w.join();
  for (auto& f : failures)
    if (f) std::rethrow_exception(f);
  return modules;
}

}  // namespace qd::detail
