// The libFuzzer targets' common entry: `<fuzzer> -qd_write_seeds=DIR` writes the target's
// seed corpus into DIR and exits (the ctest fixture runs it before fuzzing from DIR).
#pragma once

#include <cstdlib>
#include <string>

namespace qd_fuzz {

// For LLVMFuzzerInitialize: handles -qd_write_seeds=DIR with `write_seeds`, else returns.
inline void handle_seed_flag(int* argc, char*** argv, void (*write_seeds)(const std::string& dir)) {
  for (int i = 1; i < *argc; ++i) {
    const std::string a = (*argv)[i];
    if (a.rfind("-qd_write_seeds=", 0) == 0) {
      write_seeds(a.substr(16));
      std::exit(0);
    }
  }
}

}  // namespace qd_fuzz
