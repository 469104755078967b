// Serialization of IR for cache keys: canonical (nodes numbered in program order) and
// exact (the arrays as traced). Both leave out names and source positions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::ir {

namespace detail {
constexpr void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
constexpr void put_signed(std::string& out, std::int64_t v) {
  put_varint(out, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}

// Appends to a string through an index into room made ahead (no capacity check per byte:
// canonical_bytes runs for every key a warm start computes). ensure(n) before n bytes.
class byte_writer {
 public:
  explicit constexpr byte_writer(std::string& out) : out_(out), pos_(out.size()) {}
  constexpr void ensure(std::size_t n) {
    if (pos_ + n > out_.size()) out_.resize(std::max(out_.size() * 2, pos_ + n + 64));
  }
  constexpr void byte(char c) { out_[pos_++] = c; }
  constexpr void varint(std::uint64_t v) {  // at most 10 bytes
    while (v >= 0x80) {
      out_[pos_++] = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out_[pos_++] = static_cast<char>(v);
  }
  constexpr void signed_varint(std::int64_t v) {
    varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  constexpr void text(const std::string& s) {
    for (char c : s) out_[pos_++] = c;
  }
  constexpr void finish() { out_.resize(pos_); }

 private:
  std::string& out_;
  std::size_t pos_;
};

}  // namespace detail

// Bytes that identify `fn` up to renumbering: equal for IR that compiles to the
// same code, different otherwise.
constexpr std::string canonical_bytes(const function& fn) {
  std::string out = "QDIR1";
  detail::byte_writer w(out);
  w.ensure(16 + fn.params.size() * 4 + fn.nodes.size() * 24);  // about a node's bytes: rarely regrown
  w.varint(fn.params.size());
  for (const param_desc& p : fn.params) {
    w.byte(static_cast<char>(p.is_array));
    w.byte(static_cast<char>(p.type));
    w.byte(static_cast<char>(p.ndim));
    w.byte(static_cast<char>(p.needs_grad));
  }
  w.byte(static_cast<char>(fn.is_gradient));
  std::vector<id> number = canonical_numbering(fn);
  auto ref = [&](id i) { return i == none ? std::int64_t{-1} : std::int64_t{number[static_cast<std::size_t>(i)]}; };
  constexpr std::size_t node_bytes_max = 10 + 4 + 5 * 10 + 10 + 2 * 10;  // varints of at most 10 bytes
  walk(fn, 0, [&](id i, int depth) {
    const node& n = fn.at(i);
    w.ensure(node_bytes_max);
    w.varint(static_cast<std::uint64_t>(depth));
    w.byte(static_cast<char>(n.code));
    w.byte(static_cast<char>(n.type));
    w.byte(static_cast<char>(n.sub));
    w.byte(static_cast<char>(n.flags));
    w.signed_varint(ref(n.a));
    w.signed_varint(ref(n.b));
    w.signed_varint(ref(n.c));
    w.signed_varint(n.param);
    w.signed_varint(n.imm);
    w.varint(static_cast<std::uint64_t>(n.list_size));
    for (std::int32_t k = 0; k < n.list_size; ++k) {
      std::int32_t item = fn.list(n, k);
      if (is_text(item)) {
        const std::string& s = fn.strings[static_cast<std::size_t>(text_index(item))];
        w.ensure(11 + s.size());
        w.byte('t');
        w.varint(s.size());
        w.text(s);
      } else {
        w.ensure(11);
        w.byte('n');
        w.signed_varint(ref(item));
      }
    }
    // Block sizes delimit nesting; depth alone is ambiguous for if/else.
    w.ensure(2 * 10);
    w.signed_varint(n.block0 >= 0 ? static_cast<std::int64_t>(fn.block(n.block0).size()) : -1);
    w.signed_varint(n.block1 >= 0 ? static_cast<std::int64_t>(fn.block(n.block1).size()) : -1);
  });
  w.finish();
  return out;
}

// Bytes that identify `fn` exactly as traced, its node numbering included: several times
// cheaper than canonical_bytes (no walk, no renumbering: the arrays as they are), for a key
// that stands for one trace (cache::variant_key). Equal exact bytes imply equal canonical
// bytes; the converse does not hold, so such a key may miss where a canonical one hits,
// never the other way. Leaves out source positions, as canonical_bytes does. Written into
// `out`, replacing what it held: a caller that keeps one buffer reuses its memory.
inline void exact_bytes(const function& fn, std::string& out) {
  std::size_t size = 32 + fn.params.size() * 4 + fn.nodes.size() * 44 + fn.lists.size() * 4;
  for (const auto& b : fn.blocks) size += 4 + b.size() * 4;
  for (const auto& t : fn.strings) size += 4 + t.size();
  out.resize(size);
  char* at = out.data();
  auto put = [&](const auto& v) {
    std::memcpy(at, &v, sizeof v);
    at += sizeof v;
  };
  auto count = [&](std::size_t n) { put(static_cast<std::uint32_t>(n)); };
  std::memcpy(at, "QDIRX", 5);
  at += 5;
  put(static_cast<std::uint8_t>(fn.is_gradient));
  put(static_cast<std::uint8_t>(fn.has_mesh));
  count(fn.params.size());
  for (const param_desc& p : fn.params) {
    put(static_cast<std::uint8_t>(p.is_array));
    put(static_cast<std::uint8_t>(p.type));
    put(static_cast<std::uint8_t>(p.ndim));
    put(static_cast<std::uint8_t>(p.needs_grad));
  }
  count(fn.nodes.size());
  for (const node& n : fn.nodes) {  // field by field (44 bytes): the struct's padding is not data
    put(static_cast<std::uint8_t>(n.code));
    put(static_cast<std::uint8_t>(n.type));
    put(n.sub);
    put(n.flags);
    for (std::int32_t v : {n.a, n.b, n.c, n.param, n.list_begin, n.list_size, n.block0, n.block1}) put(v);
    put(n.imm);
  }
  count(fn.blocks.size());
  for (const auto& b : fn.blocks) {
    count(b.size());
    if (!b.empty()) std::memcpy(at, b.data(), b.size() * sizeof(id));
    at += b.size() * sizeof(id);
  }
  count(fn.lists.size());
  if (!fn.lists.empty()) std::memcpy(at, fn.lists.data(), fn.lists.size() * sizeof(std::int32_t));
  at += fn.lists.size() * sizeof(std::int32_t);
  count(fn.strings.size());
  for (const auto& t : fn.strings) {
    count(t.size());
    std::memcpy(at, t.data(), t.size());
    at += t.size();
  }
  out.resize(static_cast<std::size_t>(at - out.data()));
}

inline std::string exact_bytes(const function& fn) {
  std::string out;
  exact_bytes(fn, out);
  return out;
}

// FNV-1a over the canonical bytes: a constexpr content hash for slot
// assignment. Cache keys use XXH3-128 (cache/key.hpp), not this.
constexpr std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace qd::inline v0::ir
