// Worker process for store_processes_test: one store per process, driven by arguments.
//   mix <root> <index>       write one byte, wait for stdin to close, then load-or-save 16 keys twice (even
//                            indexes share keys, odd ones have their own); exit 0 if every
//                            load returned exactly the bytes of its key
//   save-big <root> <bytes>  save one large incompressible entry (to be killed mid-save)
//   save-loop <root>         save entries 0, 1, 2, ... of 0.2-2 MB forever (killed at random)
//   hold-lock <root> <hex>   take the compile lock of a key, print "locked", wait forever
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cache/cache_test_support.hpp"
#include "quadrants/cache/store.hpp"

using namespace qd::cache;

namespace {

using qd_test::loop_payload;
using qd_test::worker_key;
using qd_test::worker_payload;

int mix(const std::string& root, int index) {
  // At the gate: say so on stdout (the test's pipe), then wait for stdin to close.
  [[maybe_unused]] ssize_t said = ::write(1, "r", 1);
  char c;
  while (::read(0, &c, 1) > 0) {
  }
  store s({.root = root});
  bool use_lock = index % 4 < 2;
  for (int pass = 0; pass < 2; ++pass)
    for (std::uint64_t i = 0; i < 16; ++i) {
      std::uint64_t id = index % 2 == 0 ? i : 1000 * static_cast<std::uint64_t>(index) + i;
      std::vector<std::byte> expected = worker_payload(id);
      if (auto got = s.load(entry_kind::kernel, worker_key(id))) {
        if (*got != expected) return 3;
        continue;
      }
      store::compile_lock lock;
      if (use_lock) {
        lock = s.lock_for_compile(worker_key(id), std::chrono::seconds(10));
        if (auto got = s.load(entry_kind::kernel, worker_key(id))) {  // another process compiled it
          if (*got != expected) return 3;
          continue;
        }
      }
      if (!s.save(entry_kind::kernel, worker_key(id), expected)) return 4;
      auto again = s.load(entry_kind::kernel, worker_key(id));
      if (!again) return 5;
      if (*again != expected) return 3;
    }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  std::string mode = argv[1], root = argv[2];
  if (mode == "mix" && argc == 4) return mix(root, std::atoi(argv[3]));
  if (mode == "save-big" && argc == 4) {
    std::vector<std::byte> payload = qd_test::random_payload(std::strtoull(argv[3], nullptr, 10), 1);
    store s({.root = root, .zstd_level = 1});
    return s.save(entry_kind::module, key_builder().add("big").finish(), payload) ? 0 : 4;
  }
  if (mode == "save-loop") {
    store s({.root = root});
    for (std::uint64_t id = 0;; ++id)
      if (!s.save(entry_kind::module, worker_key(id), loop_payload(id))) return 4;
  }
  if (mode == "hold-lock" && argc == 4) {
    store s({.root = root});
    auto k = key::from_hex(argv[3]);
    if (!k) return 2;
    auto lock = s.lock_for_compile(*k, std::chrono::seconds(10));
    if (!lock) return 6;
    std::printf("locked\n");
    std::fflush(stdout);
    for (;;) ::pause();
  }
  return 2;
}
