// Finding compiled code: in this process's memory, then in the disk cache, then
// from the compiler (one program per group of misses). Internal.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/cache/key.hpp"
#include "quadrants/runtime/program.hpp"

namespace qd::detail {

// A module by key: already loaded in this process, or from the disk cache (and
// then remembered); null on a miss. A validated entry that fails to load is a miss.
QD_FUNC std::shared_ptr<backend::loaded_module> load_cached_module(program& p, const cache::key& module_key,
                                                                   const std::string& what);

struct module_result {
  std::shared_ptr<backend::loaded_module> module;
  bool compiled = false;  // false: found in the cache (another process compiled it while this one waited)
};

// Compiles `source` into a module stored under `module_key`. Processes that miss the
// same module at once take turns on its compile lock: one compiles, the others load.
QD_FUNC module_result compile_module(program& p, const std::string& source, const cache::key& module_key,
                                     const std::string& what);

// Loads or compiles each source (one compiler program each, each on its own
// thread: the caller sizes the groups); rethrows the first failure.
QD_FUNC std::vector<module_result> compile_modules(program& p, const std::vector<std::string>& sources,
                                                   const std::vector<cache::key>& module_keys,
                                                   const std::string& what);

}  // namespace qd::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/code_lookup-inl.hpp"
#endif
