// Helpers shared by the cache tests and their worker program: private temporary roots,
// log capture, and deterministic payloads that compress like machine code.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quadrants/base/log.hpp"
#include "quadrants/cache/key.hpp"

#include "support/log_capture.hpp"

namespace qd_test {

// A fresh directory under $TMPDIR (never the user's cache), removed with its contents.
struct temp_dir {
  std::string path;
  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "qd-cache-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    path = pattern;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    // Tests may leave read-only or foreign-mode directories behind; make them removable.
    for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
    ::chmod(path.c_str(), 0700);
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(std::string_view rest) const { return path + "/" + std::string(rest); }
};

inline std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Bytes shaped like machine code: instruction-like 4- and 8-byte words from a small
// vocabulary, some random immediates, and repeated short sequences. zstd-3 compresses
// them about 2.6x, between x86 code (2x) and CUBIN (2.8x).
inline std::vector<std::byte> code_like_payload(std::size_t size, std::uint64_t seed) {
  std::uint64_t state = seed * 7919 + 1;
  std::uint64_t vocabulary[64];
  for (auto& word : vocabulary) word = splitmix(state);
  std::vector<std::byte> out(size);
  for (std::size_t i = 0; i < size;) {
    std::uint64_t r = splitmix(state);
    if (i >= 256 && ((r >> 20) & 7) == 0) {  // repeat 16-47 bytes from the last 4 KB
      std::size_t from = i - 8 - (r >> 24) % (i < 4096 ? i - 8 : 4088);
      std::size_t n = 16 + ((r >> 40) & 31);
      for (std::size_t b = 0; b < n && i < size; ++b, ++i) out[i] = out[from + b];
      continue;
    }
    std::uint64_t word = (r & 15) == 0 ? splitmix(state) : vocabulary[(r >> 3) & 63] ^ ((r >> 9) & 15);
    std::size_t n = (r >> 17) & 1 ? 8 : 4;
    for (std::size_t b = 0; b < n && i < size; ++b, ++i) out[i] = static_cast<std::byte>(word >> (8 * b));
  }
  return out;
}

// Incompressible bytes: the entry stores them raw, so file sizes are predictable.
inline std::vector<std::byte> random_payload(std::size_t size, std::uint64_t seed) {
  std::uint64_t state = seed * 104729 + 3;
  std::vector<std::byte> out(size);
  for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<std::byte>(splitmix(state));
  return out;
}

// What store_worker saves, so the tests can check every byte a worker wrote.
inline qd::cache::key worker_key(std::uint64_t id) {
  return qd::cache::key_builder().add("store worker").add(id).finish();
}
inline std::vector<std::byte> worker_payload(std::uint64_t id) { return code_like_payload(20000 + id % 5 * 7000, id); }
inline std::vector<std::byte> loop_payload(std::uint64_t id) {
  return code_like_payload(200000 + id % 10 * 200000, id + 77);
}

}  // namespace qd_test
