// Device memory of an emulated GPU: host pages mapped one allocation at a time and
// tracked, so that a copy outside an allocation, a free of a pointer never returned
// (or already freed) and a use after free are refused as a driver refuses them.
// Freed ranges stay reserved without access for a while (a quarantine), so a recent
// pointer is never reused and a kernel touching freed memory faults instead of
// reading someone else's data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>

namespace qd::emulation {

class device_memory {
 public:
  explicit device_memory(std::size_t capacity) : capacity_(capacity) {}
  ~device_memory();
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;

  // Null when out of memory (the capacity, or the host's) or `bytes` is 0.
  void* allocate(std::size_t bytes);
  // False when `p` is not the start of a live allocation.
  bool release(void* p);
  // Whether [p, p + bytes) lies inside one live allocation (bytes may be 0).
  bool contains(const void* p, std::size_t bytes) const;
  bool is_device_pointer(const void* p) const { return contains(p, 0); }
  // The allocation holding `p`: its start and size, or false.
  bool range_of(const void* p, void** base, std::size_t* size) const;
  void release_all();
  std::size_t used() const;
  std::size_t capacity() const { return capacity_; }

 private:
  struct freed_range {
    std::uintptr_t start;
    std::size_t length;
  };
  void quarantine(std::uintptr_t start, std::size_t length);

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> live_;  // start -> requested size
  std::size_t used_ = 0;
  std::deque<freed_range> quarantine_;
  std::size_t quarantined_bytes_ = 0;
};

}  // namespace qd::emulation
