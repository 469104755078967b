// Canonical serialization of IR: the bytes hashed into cache keys.
// Leaves out names and source positions; nodes are numbered in program order.
#pragma once

#include <cstdint>
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
}  // namespace detail

// Bytes that identify `fn` up to renumbering: equal for IR that compiles to the
// same code, different otherwise.
constexpr std::string canonical_bytes(const function& fn) {
  std::string out = "QDIR1";
  out.reserve(16 + fn.params.size() * 4 + fn.nodes.size() * 16);  // about a node's bytes: no regrowth
  detail::put_varint(out, fn.params.size());
  for (const param_desc& p : fn.params) {
    out.push_back(static_cast<char>(p.is_array));
    out.push_back(static_cast<char>(p.type));
    out.push_back(static_cast<char>(p.ndim));
    out.push_back(static_cast<char>(p.needs_grad));
  }
  out.push_back(static_cast<char>(fn.is_gradient));
  std::vector<id> number = canonical_numbering(fn);
  auto ref = [&](id i) { return i == none ? std::int64_t{-1} : std::int64_t{number[static_cast<std::size_t>(i)]}; };
  walk(fn, 0, [&](id i, int depth) {
    const node& n = fn.at(i);
    detail::put_varint(out, static_cast<std::uint64_t>(depth));
    out.push_back(static_cast<char>(n.code));
    out.push_back(static_cast<char>(n.type));
    out.push_back(static_cast<char>(n.sub));
    out.push_back(static_cast<char>(n.flags));
    detail::put_signed(out, ref(n.a));
    detail::put_signed(out, ref(n.b));
    detail::put_signed(out, ref(n.c));
    detail::put_signed(out, n.param);
    detail::put_signed(out, n.imm);
    detail::put_varint(out, static_cast<std::uint64_t>(n.list_size));
    for (std::int32_t k = 0; k < n.list_size; ++k) {
      std::int32_t item = fn.list(n, k);
      if (is_text(item)) {
        const std::string& s = fn.strings[static_cast<std::size_t>(text_index(item))];
        out.push_back('t');
        detail::put_varint(out, s.size());
        out += s;
      } else {
        out.push_back('n');
        detail::put_signed(out, ref(item));
      }
    }
    // Block sizes delimit nesting; depth alone is ambiguous for if/else.
    detail::put_signed(out, n.block0 >= 0 ? static_cast<std::int64_t>(fn.block(n.block0).size()) : -1);
    detail::put_signed(out, n.block1 >= 0 ? static_cast<std::int64_t>(fn.block(n.block1).size()) : -1);
  });
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
