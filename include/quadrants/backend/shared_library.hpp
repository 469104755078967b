// A vendor library (CUDA driver, NVRTC, HIP) found and opened at run time with
// dlopen, so nothing links against it; symbols are resolved by name, once.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend {

// Where to look for one library, in order: each override variable (a file, or a
// directory holding one of `names` directly or under lib64/ or lib/), then
// LD_LIBRARY_PATH, then `directories`. Nothing found: the library is unavailable.
struct library_search {
  std::string what;                      // "the CUDA driver (libcuda)", for messages
  std::vector<std::string> names;        // file names, preferred first: "libcuda.so.1", ...
  std::vector<std::string> variables;    // "QD_CUDA_PATH", ...
  std::vector<std::string> directories;  // "/usr/local/cuda/lib64", ...
};

// The file dlopen would be given, without opening it; throws qd::driver_error when
// nothing is found or an override variable names nothing usable. The message names
// the library, the places searched and the variable to set.
QD_FUNC std::string locate_library(const library_search& search);

// The located file's resolved path, size and modification time, for cache keys
// (an upgrade changes them); "missing <name>" when none is found. Opens nothing.
QD_FUNC std::string library_fingerprint(const library_search& search);

// A file's identity for cache keys without opening it: its resolved path, size and
// modification time (an upgrade changes them); "unreadable <path>" when it cannot be read.
QD_FUNC std::string file_fingerprint(const std::string& path);

class shared_library {
 public:
  // Locates and opens the library for the life of the process (never closed:
  // vendor libraries do not survive dlclose well). Throws qd::driver_error.
  QD_FUNC explicit shared_library(const library_search& search);
  shared_library(const shared_library&) = delete;
  shared_library& operator=(const shared_library&) = delete;

  // The address of `name`; a qd::driver_error naming the symbol and the library if absent.
  QD_FUNC void* symbol(const char* name) const;
  // The address of `name`, or null: for entry points only some versions have.
  QD_FUNC void* optional_symbol(const char* name) const noexcept;
  const std::string& path() const noexcept { return path_; }

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string what_;
};

// A table of entry points resolved from `library`: Table::for_each_entry(table, visit)
// calls visit(member, symbol, required) for each row (backend/gpu_driver.hpp). A row
// whose symbol is null (this library has no such entry point) stays null, a missing
// optional one too; a missing required one is a qd::driver_error naming it.
template <class Table>
Table resolve_entry_points(const shared_library& library, Table table = {}) {
  Table::for_each_entry(table, [&](auto& member, const char* symbol, bool required) {
    if (symbol == nullptr) return;
    void* address = required ? library.symbol(symbol) : library.optional_symbol(symbol);
    member = reinterpret_cast<std::remove_reference_t<decltype(member)>>(address);
  });
  return table;
}

// The entry points of the library Search() finds, resolved on first use (into a copy
// of `prototype`) and kept for the life of the process (the library is never closed).
template <class Table, library_search (*Search)()>
const Table& process_entry_points(const Table& prototype = {}) {
  static const shared_library library(Search());
  static const Table table = resolve_entry_points(library, prototype);
  return table;
}

}  // namespace qd::inline v0::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/shared_library-inl.hpp"
#endif
