#include "core/device_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

namespace qd::emulation {
namespace {

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

std::size_t mapped_length(std::size_t bytes) { return (bytes + page_size() - 1) / page_size() * page_size(); }

// Address space held by freed allocations before the oldest is returned.
constexpr std::size_t quarantine_limit = std::size_t{4} << 30;

}  // namespace

device_memory::~device_memory() { release_all(); }

void* device_memory::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  {
    std::lock_guard lock(mutex_);
    if (bytes > capacity_ - used_) return nullptr;
  }
  void* p =
      ::mmap(nullptr, mapped_length(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::lock_guard lock(mutex_);
  live_[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  used_ += bytes;
  return p;
}

bool device_memory::release(void* p) {
  std::lock_guard lock(mutex_);
  auto it = live_.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == live_.end()) return false;
  used_ -= it->second;
  quarantine(it->first, mapped_length(it->second));
  live_.erase(it);
  return true;
}

void device_memory::quarantine(std::uintptr_t start, std::size_t length) {
  // The pages go back to the system; the addresses stay reserved and inaccessible.
  ::mmap(reinterpret_cast<void*>(start), length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
         0);
  quarantine_.push_back({start, length});
  quarantined_bytes_ += length;
  while (quarantined_bytes_ > quarantine_limit && !quarantine_.empty()) {
    ::munmap(reinterpret_cast<void*>(quarantine_.front().start), quarantine_.front().length);
    quarantined_bytes_ -= quarantine_.front().length;
    quarantine_.pop_front();
  }
}

bool device_memory::range_of(const void* p, void** base, std::size_t* size) const {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(mutex_);
  auto it = live_.upper_bound(a);
  if (it == live_.begin()) return false;
  --it;
  if (a - it->first >= it->second) return false;
  if (base) *base = reinterpret_cast<void*>(it->first);
  if (size) *size = it->second;
  return true;
}

bool device_memory::contains(const void* p, std::size_t bytes) const {
  void* base = nullptr;
  std::size_t size = 0;
  if (!range_of(p, &base, &size)) return false;
  const std::size_t offset = static_cast<std::size_t>(static_cast<const char*>(p) - static_cast<const char*>(base));
  return bytes <= size - offset;
}

void device_memory::release_all() {
  std::lock_guard lock(mutex_);
  for (const auto& [start, size] : live_) ::munmap(reinterpret_cast<void*>(start), mapped_length(size));
  live_.clear();
  used_ = 0;
  for (const auto& f : quarantine_) ::munmap(reinterpret_cast<void*>(f.start), f.length);
  quarantine_.clear();
  quarantined_bytes_ = 0;
}

std::size_t device_memory::used() const {
  std::lock_guard lock(mutex_);
  return used_;
}

}  // namespace qd::emulation
