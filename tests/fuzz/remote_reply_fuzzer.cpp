// libFuzzer target for the remote tier's reply reader (cache/remote-inl.hpp): arbitrary
// bytes from a server never crash, hang or allocate past the limits, and are read exactly
// as a separate, recursive reader of the same rules reads them, however the bytes arrive.
// Built with clang++ -fsanitize=fuzzer,address,undefined (make sanitize; docs/testing.md).
//
// The first four input bytes choose the limits (byte 0 == 0: the tier's own) and how the
// rest, the server's bytes, is cut into reads. `remote_reply_fuzzer -qd_write_seeds=DIR`
// writes a seed corpus and exits.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <quadrants/cache/remote.hpp>

#include "libfuzzer_seeds.hpp"

namespace {

using qd::cache::detail::redis_reply;
using qd::cache::detail::reply_limits;
using qd::cache::detail::reply_reader;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "remote_reply_fuzzer: %s\n", what);
  std::abort();
}

// What reading a stream gave: each reply, then how it ended.
struct outcome {
  std::vector<redis_reply> replies;
  bool failed = false;  // else the stream ended inside a reply, or between two
};

bool same(const redis_reply& a, const redis_reply& b) {
  if (a.type != b.type || a.integer != b.integer || a.str != b.str || a.elements.size() != b.elements.size())
    return false;
  for (std::size_t i = 0; i < a.elements.size(); ++i)
    if (!same(a.elements[i], b.elements[i])) return false;
  return true;
}

bool same(const outcome& a, const outcome& b) {
  if (a.failed != b.failed || a.replies.size() != b.replies.size()) return false;
  for (std::size_t i = 0; i < a.replies.size(); ++i)
    if (!same(a.replies[i], b.replies[i])) return false;
  return true;
}

// The reference: one reply at a time, recursively, from the complete bytes seen so far.
// The rules, written from the reader's contract: a line (type byte, text, CRLF) holds at
// most max_line bytes; a reply at most max_bytes, every size checked when its header is
// read; at most max_elements elements in all the arrays of one reply, arrays at most
// max_depth deep; numbers are decimal int64 (a leading '-', no '+'); -1 is nil.
class reference {
 public:
  enum class result { ok, incomplete, error };
  reference(std::string_view in, reply_limits limits) : in_(in), limits_(limits) {}

  result parse(redis_reply& out, std::size_t& consumed) {
    pos_ = 0;
    elements_ = 0;
    result r = one(out, 1);
    consumed = pos_;
    return r;
  }

 private:
  static std::optional<std::int64_t> number(std::string_view t) {
    const bool negative = !t.empty() && t[0] == '-';
    if (negative) t.remove_prefix(1);
    if (t.empty()) return std::nullopt;
    __int128 v = 0;
    for (char c : t) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + (c - '0');
      if (v > static_cast<__int128>(INT64_MAX) + 1) return std::nullopt;
    }
    if (negative) v = -v;
    if (v > INT64_MAX) return std::nullopt;
    return static_cast<std::int64_t>(v);
  }

  result one(redis_reply& out, std::size_t depth) {
    const std::size_t newline = in_.find('\n', pos_);
    const std::size_t n = (newline == std::string_view::npos ? in_.size() : newline + 1) - pos_;
    if (n > limits_.max_line || pos_ + n > limits_.max_bytes) return result::error;
    if (newline == std::string_view::npos) return result::incomplete;
    if (n < 3 || in_[newline - 1] != '\r') return result::error;
    const char type = in_[pos_];
    const std::string_view body = in_.substr(pos_ + 1, n - 3);
    pos_ += n;
    using kind = redis_reply::kind;
    switch (type) {
      case '+':
      case '-':
        out.type = type == '+' ? kind::status : kind::error;
        out.str = std::string(body);
        return result::ok;
      case ':':
        if (auto v = number(body)) {
          out.type = kind::integer;
          out.integer = *v;
          return result::ok;
        }
        return result::error;
      case '$': {
        auto v = number(body);
        if (!v || *v < -1) return result::error;
        if (*v == -1) return result::ok;  // nil
        const auto length = static_cast<std::uint64_t>(*v);
        if (pos_ + length + 2 > limits_.max_bytes) return result::error;
        out.type = kind::string;
        const std::size_t have = in_.size() - pos_;
        out.str = std::string(in_.substr(pos_, static_cast<std::size_t>(std::min<std::uint64_t>(have, length))));
        if (have < length) return result::incomplete;
        pos_ += static_cast<std::size_t>(length);
        for (char c : {'\r', '\n'}) {
          if (pos_ == in_.size()) return result::incomplete;
          if (in_[pos_++] != c) return result::error;
        }
        return result::ok;
      }
      case '*': {
        auto v = number(body);
        if (!v || *v < -1) return result::error;
        if (*v == -1) return result::ok;  // nil
        const auto count = static_cast<std::uint64_t>(*v);
        if (depth > limits_.max_depth || elements_ + count > limits_.max_elements) return result::error;
        elements_ += count;
        out.type = kind::array;
        for (std::uint64_t i = 0; i < count; ++i) {
          result r = one(out.elements.emplace_back(), depth + 1);
          if (r != result::ok) return r;
        }
        return result::ok;
      }
      default: return result::error;
    }
  }

  std::string_view in_;
  reply_limits limits_;
  std::size_t pos_ = 0;
  std::uint64_t elements_ = 0;
};

outcome read_reference(std::string_view stream, reply_limits limits) {
  outcome o;
  while (!stream.empty()) {
    redis_reply r;
    std::size_t consumed = 0;
    switch (reference(stream, limits).parse(r, consumed)) {
      case reference::result::ok:
        o.replies.push_back(std::move(r));
        stream.remove_prefix(consumed);
        break;
      case reference::result::incomplete: return o;
      case reference::result::error: o.failed = true; return o;
    }
  }
  return o;
}

// The reader, given the stream in reads of the sizes `cut` picks.
template <class Cut>
outcome read_in_pieces(std::string_view stream, reply_limits limits, Cut cut) {
  outcome o;
  reply_reader reader(limits);
  while (!stream.empty()) {
    std::string piece(stream.substr(0, cut(stream.size())));  // a copy: the reader keeps no view of it
    stream.remove_prefix(piece.size());
    std::string_view in(piece);
    while (!in.empty()) {
      switch (reader.feed(in)) {
        case reply_reader::state::done: o.replies.push_back(reader.take()); break;
        case reply_reader::state::more:
          if (!in.empty()) fail("asked for more with bytes left");
          break;
        case reply_reader::state::failed:
          if (reader.error().empty()) fail("failed without a reason");
          o.failed = true;
          return o;
      }
    }
  }
  return o;
}

void check_limits(const redis_reply& r, reply_limits limits, std::size_t depth, std::uint64_t& elements) {
  if (r.type != redis_reply::kind::array) return;
  if (depth > limits.max_depth) fail("a reply nested deeper than the limit");
  elements += r.elements.size();
  if (elements > limits.max_elements) fail("a reply with more elements than the limit");
  for (const redis_reply& e : r.elements) check_limits(e, limits, depth + 1, elements);
}

void check(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return;
  reply_limits limits = qd::cache::detail::tier_reply_limits;
  if (data[0] != 0) {
    limits.max_bytes = 8 + std::uint64_t{data[0]} * 16;
    limits.max_elements = data[1] % 33;
    limits.max_depth = 1 + data[2] % 3;
    limits.max_line = 4 + (data[2] >> 2);
  }
  std::uint32_t seed = data[3] * 2654435761u + 1;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 4, size - 4);

  const outcome expected = read_reference(stream, limits);
  const outcome whole = read_in_pieces(stream, limits, [](std::size_t left) { return left; });
  const outcome bytewise = read_in_pieces(stream, limits, [](std::size_t) { return std::size_t{1}; });
  const outcome pieces = read_in_pieces(stream, limits, [&](std::size_t left) {
    seed = seed * 1103515245u + 12345u;
    return std::min<std::size_t>(left, 1 + (seed >> 16) % 23);
  });
  if (!same(whole, expected)) fail("the reader and the reference disagree");
  if (!same(bytewise, whole)) fail("byte-by-byte reads give another result");
  if (!same(pieces, whole)) fail("reads of other sizes give another result");
  for (const redis_reply& r : whole.replies) {
    std::uint64_t elements = 0;
    check_limits(r, limits, 1, elements);
  }
}

void write_seeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  int n = 0;
  auto save = [&](std::string limits, std::string_view stream) {
    std::ofstream(dir + "/seed" + std::to_string(n++), std::ios::binary) << limits << stream;
  };
  const std::string tier("\0\0\0\0", 4), small("\x40\x20\x0b\x07", 4);
  for (const std::string& l : {tier, small}) {
    save(l, "+OK\r\n");
    save(l, "-ERR unknown command\r\n");
    save(l, ":42\r\n:-7\r\n");
    save(l, "$-1\r\n*-1\r\n*0\r\n$0\r\n\r\n");
    save(l, "$5\r\nQDR1x\r\n");
    save(l, "*3\r\n$4\r\nQDR1\r\n:2\r\n*3\r\n$10\r\ntok:1:2:ab\r\n:1500\r\n:0\r\n");  // a fetch: a value, bits, a lock
    save(l, "*2\r\n$1\r\n0\r\n*2\r\n$9\r\nqd:a:b:cd\r\n$9\r\nqd:a:b:ef\r\n");         // a SCAN page
    save(l, "*2147483647\r\n*2147483647\r\n*2147483647\r\n");
    save(l, "$2000000000\r\nxxxx");
    save(l, "+" + std::string(300, 'A'));
    save(l, "HTTP/1.1 400 Bad Request\r\n\r\n");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  qd_fuzz::handle_seed_flag(argc, argv, write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check(data, size);
  return 0;
}
