// Implementation of cache/records.hpp: a tag, then varint-framed fields.
#pragma once

#include <cstring>

#include "quadrants/cache/records.hpp"

namespace qd::inline v0::cache {
namespace detail {

class record_writer {
 public:
  explicit record_writer(char tag) { bytes_.push_back(static_cast<std::byte>(tag)); }
  void u64(std::uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<std::byte>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<std::byte>(v));
  }
  void text(const std::string& s) {
    u64(s.size());
    for (char c : s) bytes_.push_back(static_cast<std::byte>(c));
  }
  void k(const key& x) {
    u64(x.lo);
    u64(x.hi);
  }
  void task(const task_record& t) {
    text(t.entry);
    u64((t.parallel ? 1u : 0u) | (t.has_print ? 2u : 0u));
    u64(t.params.size());
    for (std::int32_t p : t.params) u64(static_cast<std::uint32_t>(p));
  }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

class record_reader {
 public:
  record_reader(std::span<const std::byte> bytes, char tag) : bytes_(bytes) {
    ok_ = !bytes_.empty() && bytes_[0] == static_cast<std::byte>(tag);
    pos_ = 1;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == bytes_.size(); }
  // Only the writer's spelling of a number is accepted: no bits beyond 64 and no
  // trailing zero group (0x80 0x00 is not 0), so a decoded record re-encodes to its bytes.
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int shift = 0; ok_; shift += 7) {
      if (pos_ >= bytes_.size() || shift > 63) {
        ok_ = false;
        break;
      }
      auto b = static_cast<std::uint8_t>(bytes_[pos_++]);
      if ((shift == 63 && b > 1) || (shift > 0 && b == 0)) {
        ok_ = false;
        break;
      }
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    return ok_ ? v : 0;
  }
  std::string text() {
    std::uint64_t n = u64();
    if (!ok_ || n > bytes_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string s(n, '\0');
    std::memcpy(s.data(), bytes_.data() + pos_, n);
    pos_ += n;
    return s;
  }
  key k() {
    key x;
    x.lo = u64();
    x.hi = u64();
    return x;
  }
  task_record task() {
    task_record t;
    t.entry = text();
    std::uint64_t flags = u64();
    if (flags > 3 || t.entry.empty()) ok_ = false;
    t.parallel = flags & 1;
    t.has_print = flags & 2;
    std::uint64_t n = u64();
    if (n > 4096) ok_ = false;
    for (std::uint64_t i = 0; i < n && ok_; ++i) {
      std::uint64_t p = u64();
      if (p > 0x7fffffff) ok_ = false;
      t.params.push_back(static_cast<std::int32_t>(p));
    }
    return t;
  }

 private:
  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
  bool ok_ = false;
};

}  // namespace detail

QD_FUNC std::vector<std::byte> encode(const kernel_record& r) {
  detail::record_writer w('K');
  w.k(r.module);
  w.u64(r.constructs);
  w.u64(r.needs_temporaries ? 1 : 0);
  w.u64(r.tasks.size());
  for (const auto& t : r.tasks) w.task(t);
  return w.take();
}

QD_FUNC std::vector<std::byte> encode(const offload_record& r) {
  detail::record_writer w('O');
  w.k(r.module);
  w.task(r.task);
  return w.take();
}

QD_FUNC std::vector<std::byte> encode(const explain_record& r) {
  detail::record_writer w('E');
  w.text(r.kernel);
  w.text(r.text);
  w.text(r.dot);
  w.u64(r.keys.size());
  for (const key& k : r.keys) w.k(k);
  w.text(r.variant);
  w.k(r.explained);
  w.u64(r.written);
  return w.take();
}

QD_FUNC std::vector<std::byte> encode(const variant_record& r) {
  detail::record_writer w('V');
  w.u64(r.reduction_scratch);
  w.u64(r.tasks.size());
  for (const variant_task& t : r.tasks) {
    w.k(t.offload);
    w.k(t.module);
    w.task(t.task);
    w.u64(t.draws_random ? 1 : 0);
    w.u64(t.block_dim);
    w.u64(t.param_map.size());
    for (std::int32_t p : t.param_map) w.u64(static_cast<std::uint32_t>(p));
  }
  return w.take();
}

QD_FUNC std::optional<kernel_record> decode_kernel_record(std::span<const std::byte> bytes) {
  detail::record_reader in(bytes, 'K');
  kernel_record r;
  r.module = in.k();
  std::uint64_t constructs = in.u64();
  std::uint64_t temps = in.u64();
  std::uint64_t n = in.u64();
  if (!in.ok() || constructs > UINT32_MAX || temps > 1 || n > bytes.size()) return std::nullopt;
  r.constructs = static_cast<std::uint32_t>(constructs);
  r.needs_temporaries = temps == 1;
  for (std::uint64_t t = 0; t < n && in.ok(); ++t) r.tasks.push_back(in.task());
  if (!in.ok() || !in.at_end()) return std::nullopt;
  return r;
}

QD_FUNC std::optional<offload_record> decode_offload_record(std::span<const std::byte> bytes) {
  detail::record_reader in(bytes, 'O');
  offload_record r;
  r.module = in.k();
  r.task = in.task();
  if (!in.ok() || !in.at_end()) return std::nullopt;
  return r;
}

QD_FUNC std::optional<explain_record> decode_explain_record(std::span<const std::byte> bytes) {
  detail::record_reader in(bytes, 'E');
  explain_record r;
  r.kernel = in.text();
  r.text = in.text();
  r.dot = in.text();
  std::uint64_t n = in.u64();
  if (!in.ok() || r.kernel.empty() || n > bytes.size()) return std::nullopt;
  for (std::uint64_t i = 0; i < n && in.ok(); ++i) r.keys.push_back(in.k());
  r.variant = in.text();
  r.explained = in.k();
  r.written = in.u64();
  if (!in.ok() || !in.at_end()) return std::nullopt;
  return r;
}

QD_FUNC std::optional<variant_record> decode_variant_record(std::span<const std::byte> bytes) {
  detail::record_reader in(bytes, 'V');
  variant_record r;
  r.reduction_scratch = in.u64();
  std::uint64_t n = in.u64();
  if (!in.ok() || r.reduction_scratch > (std::uint64_t{1} << 30) || n == 0 || n > bytes.size()) return std::nullopt;
  for (std::uint64_t i = 0; i < n && in.ok(); ++i) {
    variant_task t;
    t.offload = in.k();
    t.module = in.k();
    t.task = in.task();
    std::uint64_t random = in.u64(), block = in.u64(), params = in.u64();
    if (!in.ok() || random > 1 || block > UINT32_MAX || params > 4096) return std::nullopt;
    t.draws_random = random == 1;
    t.block_dim = static_cast<std::uint32_t>(block);
    for (std::uint64_t p = 0; p < params && in.ok(); ++p) {
      std::uint64_t v = in.u64();
      if (v > 0x7fffffff) return std::nullopt;
      t.param_map.push_back(static_cast<std::int32_t>(v));
    }
    r.tasks.push_back(std::move(t));
  }
  if (!in.ok() || !in.at_end()) return std::nullopt;
  return r;
}

}  // namespace qd::inline v0::cache
