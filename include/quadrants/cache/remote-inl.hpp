// Implementation of cache/remote.hpp. hiredis connects (one connection per process behind
// a mutex); the tier writes commands and reads replies itself, with its own bounded reader
// and a deadline for the whole exchange; the tags are libsodium's HMAC-SHA-256.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "quadrants/base/error.hpp"
#include "quadrants/cache/entry.hpp"
#include "quadrants/cache/hmac.hpp"
#include "quadrants/cache/records.hpp"
#include "quadrants/cache/remote.hpp"
#include "quadrants/base/format.hpp"

#if defined(QD_WITH_REMOTE_CACHE)
#include <hiredis/hiredis.h>
#endif

namespace qd::inline v0::cache {

namespace detail {

// A value on the server: magic | tag | link | the entry file (header and stored payload).
// The link names the module a record refers to (32 hex digits, zeros for a module), so
// that the fetch script sends the module with the record in the same round trip.
inline constexpr std::string_view remote_magic = "QDR1";
inline constexpr std::size_t remote_link_size = 32;
inline constexpr std::size_t remote_value_header = 4 + hmac_size + remote_link_size;
inline constexpr std::string_view no_link = "00000000000000000000000000000000";

// KEYS: the entries. ARGV: module key prefix, claim ('1'), lock token, lock ttl (ms), this
// namespace, the set of namespaces, then (when claiming) the lock value to set for each key.
// Per key: its value; or, when another process's lock is there, {its value, its PTTL, bits};
// else an integer. Bits: 1 = this process holds its lock, 4 = another secret's namespace
// has the entry. Then (link, module value or nil) for each distinct module the records name.
// Reads only its KEYS, the locks beside them and the named modules; a lock is taken with
// pcall, so a full or read-only server answers the reads all the same. The client checks a
// lock it finds (remote_lock_problem) before waiting for it: Lua cannot check the tag.
inline constexpr std::string_view fetch_script = R"lua(
local out, want, seen = {}, {}, {}
local prefix = 'qd:' .. ARGV[5] .. ':'
local mine = ARGV[3] .. ':'
local others = nil
for i, k in ipairs(KEYS) do
  local v = redis.call('GET', k)
  if v then
    out[i] = v
    local link = string.sub(v, 37, 68)
    if string.sub(v, 1, 4) == 'QDR1' and string.len(link) == 32 and link ~= '00000000000000000000000000000000'
       and not seen[link] then
      seen[link] = true
      want[#want + 1] = link
    end
  else
    local lock = k .. ':lock'
    local holder = redis.call('GET', lock)
    local bits = 0
    if holder and string.sub(holder, 1, string.len(mine)) == mine then bits = 1
    elseif not holder and ARGV[2] == '1' then
      local r = redis.pcall('SET', lock, ARGV[6 + i], 'NX', 'PX', ARGV[4])
      if type(r) == 'table' and r.ok then bits = 1 end
    end
    if others == nil then others = redis.call('SMEMBERS', ARGV[6]) end
    local rest = string.sub(k, string.len(prefix) + 1)
    for _, ns in ipairs(others) do
      if ns ~= ARGV[5] and redis.call('EXISTS', 'qd:' .. ns .. ':' .. rest) == 1 then
        bits = bits + 4
        break
      end
    end
    if holder and bits % 2 == 0 then out[i] = {holder, redis.call('PTTL', lock), bits}
    else out[i] = bits end
  end
end
for _, link in ipairs(want) do
  out[#out + 1] = link
  out[#out + 1] = redis.call('GET', ARGV[1] .. link) or false
end
return out
)lua";

// Deletes a lock only if this process still holds it (it may have expired and been retaken):
// its value starts with this process's token.
inline constexpr std::string_view release_script = R"lua(
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. ':' then return redis.call('DEL', KEYS[1]) end
return 0
)lua";

struct remote_slot {
  entry_kind kind = entry_kind::module;
  key k;
  friend bool operator==(const remote_slot&, const remote_slot&) = default;
};
struct remote_slot_hash {
  std::size_t operator()(const remote_slot& s) const noexcept {
    return key_hash{}(s.k) ^ static_cast<std::size_t>(s.kind);
  }
};

// A Redis reply (RESP2), as the tier's reader builds it.
struct redis_reply {
  enum class kind : std::uint8_t { string, status, error, integer, nil, array };
  kind type = kind::nil;
  std::int64_t integer = 0;
  std::string str;                    // string, status, error
  std::vector<redis_reply> elements;  // array
  bool is_string() const noexcept { return type == kind::string; }
};

// What one reply may hold, checked at each header before anything is read or allocated.
struct reply_limits {
  std::uint64_t max_bytes = 0;     // the reply's bytes on the wire
  std::uint64_t max_elements = 0;  // the elements of all its arrays together
  std::size_t max_depth = 0;       // 1: a flat array; 2: arrays in an array
  std::size_t max_line = 0;        // a status, error, integer or length line
};

// The tier's replies: a string at most the largest entry value (the entry limit, with the
// value header and zstd's worst-case growth), the largest fetch of a few thousand keys, and
// arrays inside arrays (SCAN, a lock's holder) but no deeper.
inline constexpr reply_limits tier_reply_limits{
    remote_value_header + entry_header_size + max_payload_size + (max_payload_size >> 7) + 65536, 262144, 2, 65536};

// An incremental RESP2 reader that never buffers more than one line: strings go straight
// into their reply, and every size is checked against the limits when its header arrives.
class reply_reader {
 public:
  enum class state : std::uint8_t { more, done, failed };
  explicit reply_reader(reply_limits limits) : limits_(limits) {}

  // Consumes bytes from the front of `in`, stopping after the end of one reply (done: take()
  // it; the rest of `in` belongs to the next). failed: error() says why; the stream is lost.
  state feed(std::string_view& in) {
    if (!error_.empty()) return state::failed;
    while (!in.empty()) {
      if (bulk_) {
        if (bulk_left_ > 0) {
          const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(in.size(), bulk_left_));
          bulk_->str.append(in.data(), n);
          in.remove_prefix(n);
          bytes_ += n;
          bulk_left_ -= n;
          continue;
        }
        const char c = in.front();
        in.remove_prefix(1);
        bytes_ += 1;
        if (c != (bulk_crlf_ == 0 ? '\r' : '\n'))
          return fail("a string not followed by CRLF, which is not the Redis protocol");
        if (++bulk_crlf_ < 2) continue;
        bulk_ = nullptr;
        if (finish()) return state::done;
        continue;
      }
      const std::size_t newline = in.find('\n');
      const std::size_t n = newline == std::string_view::npos ? in.size() : newline + 1;
      if (line_.size() + n > limits_.max_line)
        return fail(fmt::format("a line longer than {} bytes, which no answer of the tier has", limits_.max_line));
      if (bytes_ + n > limits_.max_bytes) return too_large(bytes_ + n);
      line_.append(in.data(), n);
      in.remove_prefix(n);
      bytes_ += n;
      if (newline == std::string_view::npos) continue;
      if (line_.size() < 3 || line_[line_.size() - 2] != '\r')
        return fail("a line not ending in CRLF, which is not the Redis protocol");
      const state s = header(line_[0], std::string_view(line_).substr(1, line_.size() - 3));
      line_.clear();
      if (s != state::more) return s;
    }
    return state::more;
  }

  // The reply completed by feed(); the reader is then ready for the next one.
  redis_reply take() {
    redis_reply r = std::move(root_);
    root_ = {};
    frames_.clear();
    bytes_ = elements_ = 0;
    return r;
  }
  const std::string& error() const noexcept { return error_; }

 private:
  struct frame {
    redis_reply* array;
    std::uint64_t left;  // elements still to come
  };

  state fail(std::string why) {
    error_ = std::move(why);
    return state::failed;
  }
  state too_large(std::uint64_t bytes) {
    return fail(fmt::format("a reply of {} bytes or more, larger than any entry (a reply holds at most {} bytes)",
                            bytes, limits_.max_bytes));
  }

  static std::optional<std::int64_t> number(std::string_view text) {
    std::int64_t v = 0;
    if (text.empty() || text.front() == '+') return std::nullopt;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
  }

  // The next reply: the root, or the next element of the innermost open array.
  redis_reply* start() { return frames_.empty() ? &root_ : &frames_.back().array->elements.emplace_back(); }

  // A reply just ended: closes the arrays it completes. True when the root is complete.
  bool finish() {
    while (!frames_.empty()) {
      if (--frames_.back().left > 0) return false;
      frames_.pop_back();
    }
    return true;
  }

  state header(char type, std::string_view body) {
    using kind = redis_reply::kind;
    switch (type) {
      case '+':
      case '-': {
        redis_reply* r = start();
        r->type = type == '+' ? kind::status : kind::error;
        r->str.assign(body);
        return finish() ? state::done : state::more;
      }
      case ':': {
        std::optional<std::int64_t> v = number(body);
        if (!v) return fail("an integer reply that is not a number, which is not the Redis protocol");
        redis_reply* r = start();
        r->type = kind::integer;
        r->integer = *v;
        return finish() ? state::done : state::more;
      }
      case '$': {
        std::optional<std::int64_t> v = number(body);
        if (!v || *v < -1) return fail("a string length that is not one, which is not the Redis protocol");
        if (*v == -1) return finish_nil();
        const auto length = static_cast<std::uint64_t>(*v);
        if (length + 2 > limits_.max_bytes - bytes_)
          return fail(fmt::format("a string of {} bytes, larger than any entry (a reply holds at most {} bytes)",
                                  length, limits_.max_bytes));
        redis_reply* r = start();
        r->type = kind::string;
        r->str.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(length, std::uint64_t{1} << 20)));
        bulk_ = r;
        bulk_left_ = length;
        bulk_crlf_ = 0;
        return state::more;
      }
      case '*': {
        std::optional<std::int64_t> v = number(body);
        if (!v || *v < -1) return fail("an array length that is not one, which is not the Redis protocol");
        if (*v == -1) return finish_nil();
        const auto count = static_cast<std::uint64_t>(*v);
        if (frames_.size() + 1 > limits_.max_depth)
          return fail(fmt::format("arrays nested {} deep (no answer of the tier nests more than {})",
                                  frames_.size() + 1, limits_.max_depth));
        if (count > limits_.max_elements - elements_)
          return fail(fmt::format("an array of {} elements (a reply holds at most {})", count, limits_.max_elements));
        elements_ += count;
        redis_reply* r = start();
        r->type = kind::array;
        if (count == 0) return finish() ? state::done : state::more;
        r->elements.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, 64)));
        frames_.push_back({r, count});
        return state::more;
      }
      default:
        return fail(fmt::format("a reply starting with the byte 0x{:02x}, which is not the Redis protocol",
                                static_cast<unsigned>(static_cast<unsigned char>(type))));
    }
  }
  state finish_nil() {
    start()->type = redis_reply::kind::nil;
    return finish() ? state::done : state::more;
  }

  reply_limits limits_;
  redis_reply root_;
  std::vector<frame> frames_;
  redis_reply* bulk_ = nullptr;  // the string being read
  std::uint64_t bulk_left_ = 0;  // its bytes still to come
  int bulk_crlf_ = 0;            // bytes of its CRLF seen
  std::string line_;             // the header line being read
  std::uint64_t bytes_ = 0, elements_ = 0;
  std::string error_;
};

// What a reply is, for messages.
QD_FUNC std::string reply_text(const redis_reply& r) {
  switch (r.type) {
    case redis_reply::kind::string:
    case redis_reply::kind::status:
    case redis_reply::kind::error: return r.str.substr(0, 200);
    case redis_reply::kind::integer: return fmt::format("the integer {}", r.integer);
    case redis_reply::kind::nil: return "nil";
    case redis_reply::kind::array: return fmt::format("an array of {} elements", r.elements.size());
  }
  return "?";
}

// One argument of a command, borrowed from the caller.
struct remote_arg {
  const char* data;
  std::size_t size;
  // Implicit on purpose, so that commands read as {"GET", name}.
  remote_arg(std::string_view s) : data(s.data()), size(s.size()) {}
  remote_arg(const std::string& s) : data(s.data()), size(s.size()) {}
  remote_arg(const char* s) : data(s), size(std::strlen(s)) {}
  remote_arg(std::span<const std::byte> b) : data(reinterpret_cast<const char*>(b.data())), size(b.size()) {}
};
using remote_command = std::vector<remote_arg>;

struct remote_state {
  remote_options options;
  remote_address address;
  bool supported = false;
  std::string ns, prefix;
  std::string token;  // names this process's locks: random, then its pid
  pid_t owner = 0;    // the process the connection, token and locks belong to

  std::mutex mutex;  // the connection, the buffer and the sets below
#if defined(QD_WITH_REMOTE_CACHE)
  redisContext* ctx = nullptr;  // connected by hiredis; the tier reads and writes its socket itself
#endif
  std::vector<char> io;   // what a read takes from the socket at once
  bool scripting = true;  // false once EVAL was refused: two pipelined round trips instead
  bool registered = false;
  std::chrono::milliseconds backoff{0};
  std::atomic<std::int64_t> retry_at{0};          // steady-clock ns; the tier is skipped until then
  std::atomic<std::int64_t> writes_resume_at{0};  // after the server refused a write (full)
  std::string last_error;
  std::atomic<bool> warned_fault{false}, warned_auth{false}, warned_foreign{false}, warned_full{false};
  std::atomic<bool> warned_lock{false}, warned_wait{false};

  std::unordered_map<remote_slot, std::vector<std::byte>, remote_slot_hash> buffer;
  std::size_t buffer_bytes = 0;
  std::unordered_set<remote_slot, remote_slot_hash> absent, held;

  std::atomic<std::uint64_t> hits{0}, misses{0}, stores{0}, rejected{0}, errors{0};
  std::atomic<std::uint64_t> bytes_read{0}, bytes_written{0}, round_trips{0}, locks_taken{0}, waited{0};
};

QD_FUNC std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

QD_FUNC std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

QD_FUNC std::string percent_decode(std::string_view text, std::string_view url) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = i + 2 < text.size() ? hex(text[i + 1]) : -1, lo = i + 2 < text.size() ? hex(text[i + 2]) : -1;
    if (hi < 0 || lo < 0)
      throw user_error(fmt::format("remote_cache '{}': a '%' must be followed by two hex digits", url));
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

QD_FUNC int parse_url_number(std::string_view text, long long max, std::string_view what, std::string_view url) {
  long long v = 0;
  if (text.empty() || text.size() > 10) v = -1;
  for (char c : text) {
    if (c < '0' || c > '9') {
      v = -1;
      break;
    }
    v = v * 10 + (c - '0');
  }
  if (v < 0 || v > max)
    throw user_error(
        fmt::format("remote_cache '{}': {} '{}' is not a number from 0 to {}; write "
                    "redis://host:6379/0 or unix:///path/to/redis.sock",
                    url, what, text, max));
  return static_cast<int>(v);
}

// The tag of a value: over the magic, the entry's kind and key, the link and the entry.
QD_FUNC hmac_tag value_tag(const remote_state& s, entry_kind kind, const key& k, std::string_view link,
                           std::span<const std::byte> entry) {
  std::byte id[17];
  id[0] = static_cast<std::byte>(kind);
  for (int i = 0; i < 8; ++i) {
    id[1 + i] = static_cast<std::byte>(k.lo >> (8 * i));
    id[9 + i] = static_cast<std::byte>(k.hi >> (8 * i));
  }
  return hmac(s.options.secret, {as_bytes(remote_magic), std::span<const std::byte>(id), as_bytes(link), entry});
}

// The module a record names, as a link; no_link for modules and undecodable records.
QD_FUNC std::string record_link(entry_kind kind, std::span<const std::byte> payload) {
  switch (kind) {
    case entry_kind::module:
    case entry_kind::explain:
    case entry_kind::variant: return std::string(no_link);  // a variant names several modules
    case entry_kind::kernel:
      if (auto r = decode_kernel_record(payload)) return r->module.hex();
      return std::string(no_link);
    case entry_kind::offload:
      if (auto r = decode_offload_record(payload)) return r->module.hex();
      return std::string(no_link);
  }
  return std::string(no_link);
}

QD_FUNC std::vector<std::byte> make_value(const remote_state& s, entry_kind kind, const key& k,
                                          std::span<const std::byte> payload) {
  std::vector<std::byte> entry = encode_entry(kind, k, payload, s.options.zstd_level);
  std::string link = record_link(kind, payload);
  hmac_tag tag{};
  if (!s.options.unauthenticated) tag = value_tag(s, kind, k, link, entry);
  std::vector<std::byte> value;
  value.reserve(remote_value_header + entry.size());
  auto append = [&](std::span<const std::byte> part) { value.insert(value.end(), part.begin(), part.end()); };
  append(as_bytes(remote_magic));
  append(tag);
  append(as_bytes(link));
  append(entry);
  return value;
}

enum class value_verdict { ok, bad_tag, invalid };

// Checks a value fetched for (kind, k): tag first (nothing else is trusted before it),
// then everything a disk entry is checked for.
QD_FUNC value_verdict open_value(const remote_state& s, entry_kind kind, const key& k, std::span<const std::byte> value,
                                 std::vector<std::byte>& payload, std::string& why) {
  if (value.size() < remote_value_header + entry_header_size ||
      std::memcmp(value.data(), remote_magic.data(), remote_magic.size()) != 0) {
    why = "not a Quadrants entry (magic or size)";
    return s.options.unauthenticated ? value_verdict::invalid : value_verdict::bad_tag;
  }
  std::string_view link(reinterpret_cast<const char*>(value.data()) + 4 + hmac_size, remote_link_size);
  std::span<const std::byte> entry = value.subspan(remote_value_header);
  if (!s.options.unauthenticated) {
    hmac_tag got;
    std::memcpy(got.data(), value.data() + 4, hmac_size);
    if (!hmac_equal(got, value_tag(s, kind, k, link, entry))) {
      why = "its HMAC does not match";
      return value_verdict::bad_tag;
    }
  }
  std::optional<std::vector<std::byte>> decoded = decode_entry(entry, kind, k, &why);
  if (!decoded) return value_verdict::invalid;
  payload = std::move(*decoded);
  return value_verdict::ok;
}

QD_FUNC std::string remote_key(const remote_state& s, entry_kind kind, const key& k) {
  return fmt::format("{}{}:{}", s.prefix, name(kind), k.hex());
}

QD_FUNC bool backing_off(const remote_state& s) { return steady_ns() < s.retry_at.load(std::memory_order_relaxed); }

QD_FUNC std::string seconds_text(std::chrono::milliseconds d) {
  return fmt::format("{:.1f} s", static_cast<double>(d.count()) / 1000.0);
}

// The tier stops for a back-off after any fault; one warning per process, later ones at debug.
QD_FUNC void fault(remote_state& s, const std::string& why) {
#if defined(QD_WITH_REMOTE_CACHE)
  if (s.ctx) {
    redisFree(s.ctx);
    s.ctx = nullptr;
  }
#endif
  s.errors.fetch_add(1, std::memory_order_relaxed);
  s.backoff = s.backoff.count() == 0 ? s.options.retry_after
                                     : std::min<std::chrono::milliseconds>(s.backoff * 2, std::chrono::minutes(5));
  s.retry_at = steady_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(s.backoff).count();
  s.last_error = why;
  qd::detail::log_fmt(s.warned_fault.exchange(true) ? log_level::debug : log_level::warn,
                      "remote cache {}: {}; using the local cache only, retrying in {}", s.address.text(), why,
                      seconds_text(s.backoff));
}

// A fresh token for this process's locks: random bits, then the pid (for people reading them).
QD_FUNC std::string make_token() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}-{}", rd(), rd(), ::getpid());
}

// A child of fork() shares its parent's connection, token and locks: it takes a connection,
// a token and counters of its own (the parent reports its counts), and holds no lock. The
// caller holds s.mutex; one getpid() per call of the tier.
QD_FUNC void adopt_after_fork(remote_state& s) {
  const pid_t self = ::getpid();
  if (s.owner == self) return;
  s.owner = self;
#if defined(QD_WITH_REMOTE_CACHE)
  if (s.ctx) {  // closes this process's copy of the socket; the parent's connection lives on
    redisFree(s.ctx);
    s.ctx = nullptr;
  }
#endif
  s.token = make_token();
  s.held.clear();
  for (auto* counter : {&s.hits, &s.misses, &s.stores, &s.rejected, &s.errors, &s.bytes_read, &s.bytes_written,
                        &s.round_trips, &s.locks_taken, &s.waited})
    counter->store(0, std::memory_order_relaxed);
}

QD_FUNC std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

QD_FUNC std::string hex_of(std::span<const std::byte> bytes) {
  std::string out;
  for (std::byte b : bytes) out += fmt::format("{:02x}", std::to_integer<unsigned>(b));
  return out;
}

// The tag of a lock value's head (token:issued:ttl) on the lock `lock_name`.
QD_FUNC hmac_tag lock_tag(const remote_state& s, std::string_view lock_name, std::string_view head) {
  return hmac(s.options.secret, {as_bytes(std::string_view("quadrants remote cache lock\0", 28)), as_bytes(lock_name),
                                 as_bytes(std::string_view("\0", 1)), as_bytes(head)});
}

// The value of a compile lock this process takes: token:issued (unix ms):ttl (ms):tag, the
// tag an HMAC under the secret (zeros without one), so that others can tell a genuine lock.
QD_FUNC std::string make_lock_value(const remote_state& s, std::string_view lock_name) {
  std::string head = fmt::format("{}:{}:{}", s.token, wall_ms(), s.options.lock_ttl.count());
  std::string tag = s.options.unauthenticated ? std::string(2 * hmac_size, '0') : hex_of(lock_tag(s, lock_name, head));
  return head + ":" + tag;
}

// Clocks of the machines sharing a server may differ by this much.
inline constexpr std::int64_t lock_clock_skew_ms = 60000;

// Why a lock found on the server is not worth waiting for (planted, forged, replayed or
// stuck), or empty for a genuine one: taken by a process with this secret, with an expiry.
QD_FUNC std::string remote_lock_problem(const remote_state& s, std::string_view lock_name, std::string_view value,
                                        std::int64_t pttl) {
  if (pttl == -1) return "it has no expiry";
  if (pttl < 0) return "it is gone";
  const std::size_t tag_at = value.rfind(':');
  const std::size_t ttl_at = tag_at == std::string_view::npos ? tag_at : value.rfind(':', tag_at - 1);
  const std::size_t issued_at =
      ttl_at == std::string_view::npos || ttl_at == 0 ? std::string_view::npos : value.rfind(':', ttl_at - 1);
  std::int64_t issued = 0, ttl = 0;
  auto number = [](std::string_view text, std::int64_t& v) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    return !text.empty() && ec == std::errc() && end == text.data() + text.size();
  };
  if (issued_at == std::string_view::npos || value.size() - tag_at - 1 != 2 * hmac_size ||
      !number(value.substr(issued_at + 1, ttl_at - issued_at - 1), issued) ||
      !number(value.substr(ttl_at + 1, tag_at - ttl_at - 1), ttl) || ttl <= 0)
    return "its value is not one this tier writes";
  if (!s.options.unauthenticated) {
    const std::string expected = hex_of(lock_tag(s, lock_name, value.substr(0, tag_at)));
    hmac_tag got{}, want{};
    for (std::size_t i = 0; i < hmac_size; ++i) {  // compared in constant time, as entries are
      unsigned a = 0, b = 0;
      std::from_chars(value.data() + tag_at + 1 + 2 * i, value.data() + tag_at + 3 + 2 * i, a, 16);
      std::from_chars(expected.data() + 2 * i, expected.data() + 2 * i + 2, b, 16);
      got[i] = static_cast<std::byte>(a);
      want[i] = static_cast<std::byte>(b);
    }
    if (!hmac_equal(got, want)) return "it is not signed with this remote_cache_secret";
  }
  if (pttl > ttl) return fmt::format("it expires in {} ms, later than the {} ms its holder gave it", pttl, ttl);
  if (wall_ms() > issued + ttl + lock_clock_skew_ms)
    return fmt::format("it was taken {} s ago and should have expired (a replayed lock)", (wall_ms() - issued) / 1000);
  return {};
}

// A lock not worth waiting for: one warning per process, later ones at debug.
QD_FUNC void note_ignored_lock(remote_state& s, entry_kind kind, const key& k, const std::string& why) {
  qd::detail::log_fmt(s.warned_lock.exchange(true) ? log_level::debug : log_level::warn,
                      "remote cache {}: the compile lock on {} {} is ignored: {}. Only a process with this "
                      "remote_cache_secret takes locks, always with an expiry, so it was planted or replayed by "
                      "someone who can write to the server; compiling here instead of waiting for it",
                      s.address.text(), name(kind), k.hex(), why);
}

#if defined(QD_WITH_REMOTE_CACHE)

// The whole exchange may take remote_cache_timeout_ms, plus this much per byte moved, so that
// a large entry on a slow link (8 MiB/s) arrives while a trickle does not stretch the wait.
inline constexpr std::int64_t exchange_ns_per_byte = 1000000000 / (std::int64_t{8} << 20);

QD_FUNC void append_command(std::string& out, const remote_command& c) {
  out += fmt::format("*{}\r\n", c.size());
  for (const remote_arg& a : c) {
    out += fmt::format("${}\r\n", a.size);
    out.append(a.data, a.size);
    out += "\r\n";
  }
}

QD_FUNC std::string timeout_text(const remote_state& s) {
  return fmt::format("remote_cache_timeout_ms = {}", s.options.timeout.count());
}

// Writes the commands and reads their replies, all by `deadline` (steady ns; it moves out
// with each byte moved); nullopt after a fault.
QD_FUNC std::optional<std::vector<redis_reply>> exchange(remote_state& s, const std::vector<remote_command>& commands,
                                                         std::int64_t deadline) {
  std::string out;
  for (const remote_command& c : commands) append_command(out, c);
  if (s.io.empty()) s.io.resize(std::size_t{256} << 10);
  const int fd = s.ctx->fd;
  reply_reader reader(tier_reply_limits);
  std::vector<redis_reply> replies;
  replies.reserve(commands.size());
  std::size_t written = 0;
  std::uint64_t received = 0;
  while (replies.size() < commands.size()) {
    const std::int64_t left =
        deadline + static_cast<std::int64_t>(written + received) * exchange_ns_per_byte - steady_ns();
    if (left <= 0) {
      fault(s, received == 0 ? fmt::format("no answer within {}", timeout_text(s))
                             : fmt::format("the answer did not arrive within {} ({} bytes came, too slowly)",
                                           timeout_text(s), received));
      return std::nullopt;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (written < out.size() ? POLLOUT : 0)), 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>((left + 999999) / 1000000, 60000)));
    if (rc < 0 && errno != EINTR) {
      fault(s, fmt::format("the connection failed ({})", std::strerror(errno)));
      return std::nullopt;
    }
    if (rc <= 0) continue;
    if (p.revents & POLLOUT) {
      const ssize_t n = ::send(fd, out.data() + written, out.size() - written, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        fault(s, fmt::format("the connection was lost ({})", std::strerror(errno)));
        return std::nullopt;
      }
      if (n > 0) written += static_cast<std::size_t>(n);
    }
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const ssize_t n = ::recv(fd, s.io.data(), s.io.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n <= 0) {
      fault(s, fmt::format("the connection was lost ({})", n == 0 ? "the server closed it" : std::strerror(errno)));
      return std::nullopt;
    }
    received += static_cast<std::uint64_t>(n);
    std::string_view in(s.io.data(), static_cast<std::size_t>(n));
    while (!in.empty()) {
      if (replies.size() == commands.size()) {
        fault(s, "the server's answer is not the Redis protocol (more replies than commands)");
        return std::nullopt;
      }
      const reply_reader::state st = reader.feed(in);
      if (st == reply_reader::state::failed) {
        fault(s, fmt::format("the server's answer is refused: {}", reader.error()));
        return std::nullopt;
      }
      if (st == reply_reader::state::done) replies.push_back(reader.take());
    }
  }
  s.round_trips.fetch_add(1, std::memory_order_relaxed);
  return replies;
}

QD_FUNC bool connect(remote_state& s, std::int64_t deadline) {
  const std::int64_t left_ms = std::max<std::int64_t>(1, (deadline - steady_ns()) / 1000000);
  struct timeval tv;
  tv.tv_sec = static_cast<time_t>(left_ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((left_ms % 1000) * 1000);
  s.ctx = s.address.unix_socket ? redisConnectUnixWithTimeout(s.address.path.c_str(), tv)
                                : redisConnectWithTimeout(s.address.host.c_str(), s.address.port, tv);
  if (!s.ctx || s.ctx->err) {
    std::string why = s.ctx ? s.ctx->errstr : "out of memory";
    fault(s, fmt::format("cannot connect ({})", why));
    return false;
  }
  const int flags = ::fcntl(s.ctx->fd, F_GETFL);
  if (flags < 0 || ::fcntl(s.ctx->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    fault(s, fmt::format("cannot use the connection ({})", std::strerror(errno)));
    return false;
  }
  std::vector<remote_command> setup;
  std::string db = std::to_string(s.address.db);
  if (!s.address.password.empty()) {
    if (s.address.user.empty())
      setup.push_back({"AUTH", s.address.password});
    else
      setup.push_back({"AUTH", s.address.user, s.address.password});
  }
  if (s.address.db != 0) setup.push_back({"SELECT", db});
  if (setup.empty()) return true;
  auto replies = exchange(s, setup, deadline);
  if (!replies) return false;
  for (const redis_reply& r : *replies)
    if (r.type == redis_reply::kind::error) {
      fault(s, fmt::format("the server refused the connection's set-up ({}); check the password and the "
                           "database number in remote_cache",
                           reply_text(r)));
      return false;
    }
  return true;
}

// Sends the commands as one pipeline and reads their replies; nullopt after a fault. The
// exchange, connecting included, has remote_cache_timeout_ms (and time for its bytes).
QD_FUNC std::optional<std::vector<redis_reply>> send(remote_state& s, const std::vector<remote_command>& commands) {
  const std::int64_t deadline =
      steady_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(s.options.timeout).count();
  if (s.ctx) {
    // Bytes nobody asked for, or the server's end of an idle connection: start afresh.
    pollfd p{s.ctx->fd, POLLIN, 0};
    if (::poll(&p, 1, 0) != 0) {
      qd::detail::log_fmt(log_level::debug,
                          "remote cache {}: the connection was closed or sent unasked bytes; "
                          "reconnecting",
                          s.address.text());
      redisFree(s.ctx);
      s.ctx = nullptr;
    }
  }
  if (!s.ctx && !connect(s, deadline)) return std::nullopt;
  auto replies = exchange(s, commands, deadline);
  if (!replies) return std::nullopt;
  if (s.backoff.count() != 0) {
    s.backoff = std::chrono::milliseconds(0);
    qd::detail::log_fmt(log_level::info, "remote cache {}: reachable again", s.address.text());
  }
  return replies;
}

// A round trip, unless the tier is backing off.
QD_FUNC std::optional<std::vector<redis_reply>> round_trip(remote_state& s,
                                                           const std::vector<remote_command>& commands) {
  if (!s.supported || backing_off(s)) return std::nullopt;
  return send(s, commands);
}

QD_FUNC std::span<const std::byte> reply_bytes(const redis_reply& r) { return as_bytes(r.str); }

// Judges one value fetched for (kind, k); hits go to `out`.
QD_FUNC bool accept_value(remote_state& s, entry_kind kind, const key& k, const redis_reply& r,
                          std::vector<remote_entry>& out) {
  s.bytes_read.fetch_add(r.str.size(), std::memory_order_relaxed);
  remote_entry e{kind, k, {}};
  std::string why;
  switch (open_value(s, kind, k, reply_bytes(r), e.payload, why)) {
    case value_verdict::ok:
      s.hits.fetch_add(1, std::memory_order_relaxed);
      out.push_back(std::move(e));
      return true;
    case value_verdict::bad_tag:
      s.rejected.fetch_add(1, std::memory_order_relaxed);
      qd::detail::log_fmt(s.warned_auth.exchange(true) ? log_level::debug : log_level::warn,
                          "remote cache {}: refused {} {}: {} (written under another remote_cache_secret, or "
                          "altered on the server); it is recompiled here and replaced",
                          s.address.text(), name(kind), k.hex(), why);
      return false;
    case value_verdict::invalid:
      s.rejected.fetch_add(1, std::memory_order_relaxed);
      qd::detail::log_fmt(log_level::debug, "remote cache {}: refused {} {}: {}", s.address.text(), name(kind), k.hex(),
                          why);
      return false;
  }
  return false;
}

QD_FUNC void note_foreign(remote_state& s, entry_kind kind, const key& k) {
  qd::detail::log_fmt(s.warned_foreign.exchange(true) ? log_level::debug : log_level::warn,
                      "remote cache {}: {} {} is on the server under another remote_cache_secret, not under this "
                      "one (namespace {}); entries are shared only between machines with the same secret: check "
                      "remote_cache_secret",
                      s.address.text(), name(kind), k.hex(), s.ns);
}

// What another process's lock on (kind, k) means: wait for it, or (not genuine) ignore it.
QD_FUNC remote_status judge_lock(remote_state& s, entry_kind kind, const key& k, const redis_reply& holder,
                                 const redis_reply& pttl) {
  const std::string lock_name = remote_key(s, kind, k) + ":lock";
  std::string why = !holder.is_string() || pttl.type != redis_reply::kind::integer
                        ? std::string("the server described it oddly")
                        : remote_lock_problem(s, lock_name, holder.str, pttl.integer);
  if (why.empty()) return remote_status::locked_elsewhere;
  note_ignored_lock(s, kind, k, why);
  return remote_status::absent;
}

// The script fetch; nullopt with `scripting` cleared when the server refuses EVAL.
QD_FUNC std::optional<remote_fetch> fetch_scripted(remote_state& s, entry_kind kind, std::span<const key> keys,
                                                   bool claim, bool& faulted) {
  std::vector<std::string> names, values;
  for (const key& k : keys) names.push_back(remote_key(s, kind, k));
  if (claim)
    for (const std::string& n : names) values.push_back(make_lock_value(s, n + ":lock"));
  std::string module_prefix = s.prefix + "module:";
  std::string count = std::to_string(keys.size());
  std::string ttl = std::to_string(s.options.lock_ttl.count());
  remote_command c{"EVAL", fetch_script, count};
  for (const std::string& n : names) c.emplace_back(n);
  c.insert(c.end(), {module_prefix, claim ? "1" : "0", s.token, ttl, s.ns, "qd:namespaces"});
  for (const std::string& v : values) c.emplace_back(v);
  auto replies = round_trip(s, {c});
  if (!replies) {
    faulted = true;
    return std::nullopt;
  }
  const redis_reply& r = (*replies)[0];
  if (r.type == redis_reply::kind::error) {
    const std::string& text = r.str;
    if (text.starts_with("BUSY") || text.starts_with("LOADING") || text.starts_with("MASTERDOWN")) {
      fault(s, fmt::format("the server is not answering scripts now ({})", text));
      faulted = true;
      return std::nullopt;
    }
    qd::detail::log_fmt(log_level::debug, "remote cache {}: EVAL refused ({}); fetching in two round trips",
                        s.address.text(), text);
    s.scripting = false;
    return std::nullopt;
  }
  auto unexpected = [&](const redis_reply& what) {
    fault(s, fmt::format("unexpected answer to the fetch script ({})", reply_text(what)));
    faulted = true;
    return std::nullopt;
  };
  if (r.type != redis_reply::kind::array || r.elements.size() < keys.size() ||
      (r.elements.size() - keys.size()) % 2 != 0)
    return unexpected(r);
  remote_fetch f;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const redis_reply& v = r.elements[i];
    remote_status status = remote_status::absent;
    std::int64_t bits = 0;
    if (v.is_string()) {
      if (accept_value(s, kind, keys[i], v, f.entries)) status = remote_status::hit;
    } else if (v.type == redis_reply::kind::integer) {
      bits = v.integer;
      if (bits & 1) status = remote_status::claimed;
    } else if (v.type == redis_reply::kind::array && v.elements.size() == 3 &&
               v.elements[2].type == redis_reply::kind::integer) {
      bits = v.elements[2].integer;
      status = judge_lock(s, kind, keys[i], v.elements[0], v.elements[1]);
    } else {
      return unexpected(v);
    }
    if (bits & 4) note_foreign(s, kind, keys[i]);
    f.status.push_back(status);
  }
  for (std::size_t i = keys.size(); i + 1 < r.elements.size(); i += 2) {
    const redis_reply& link = r.elements[i];
    const redis_reply& v = r.elements[i + 1];
    std::optional<key> mk = link.is_string() ? key::from_hex(link.str) : std::nullopt;
    if (mk && v.is_string()) accept_value(s, entry_kind::module, *mk, v, f.entries);
  }
  return f;
}

// Without scripting: the values and their locks, then the named modules and the claims.
QD_FUNC std::optional<remote_fetch> fetch_pipelined(remote_state& s, entry_kind kind, std::span<const key> keys,
                                                    bool claim) {
  std::vector<std::string> names, locks;
  for (const key& k : keys) {
    names.push_back(remote_key(s, kind, k));
    locks.push_back(names.back() + ":lock");
  }
  std::vector<remote_command> first;
  for (const std::string& n : names) first.push_back({"GET", n});
  for (const std::string& l : locks) first.push_back({"GET", l});
  for (const std::string& l : locks) first.push_back({"PTTL", l});
  auto replies = round_trip(s, first);
  if (!replies) return std::nullopt;
  remote_fetch f;
  std::vector<std::string> links;
  std::vector<remote_command> second;
  std::string ttl = std::to_string(s.options.lock_ttl.count());
  std::vector<std::size_t> claiming;
  const std::string mine = s.token + ":";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const redis_reply& v = (*replies)[i];
    const redis_reply& holder = (*replies)[keys.size() + i];
    if (v.is_string()) {
      bool ok = accept_value(s, kind, keys[i], v, f.entries);
      f.status.push_back(ok ? remote_status::hit : remote_status::absent);
      if (ok && v.str.size() >= remote_value_header) {
        std::string link = v.str.substr(4 + hmac_size, remote_link_size);
        if (link != no_link && std::find(links.begin(), links.end(), link) == links.end()) links.push_back(link);
      }
      continue;
    }
    if (holder.is_string()) {
      f.status.push_back(holder.str.starts_with(mine)
                             ? remote_status::claimed
                             : judge_lock(s, kind, keys[i], holder, (*replies)[2 * keys.size() + i]));
    } else {
      f.status.push_back(remote_status::absent);
      if (claim) claiming.push_back(i);
    }
  }
  std::vector<std::string> module_names, values;
  for (const std::string& l : links) module_names.push_back(s.prefix + "module:" + l);
  for (const std::string& m : module_names) second.push_back({"GET", m});
  for (std::size_t i : claiming) values.push_back(make_lock_value(s, locks[i]));
  for (std::size_t j = 0; j < claiming.size(); ++j) {
    remote_command c{"SET", locks[claiming[j]], values[j], "NX", "PX"};
    c.emplace_back(ttl);
    second.push_back(std::move(c));
  }
  if (second.empty()) return f;
  auto more = round_trip(s, second);
  if (!more) return f;
  for (std::size_t j = 0; j < links.size(); ++j)
    if (auto mk = key::from_hex(links[j]); mk && (*more)[j].is_string())
      accept_value(s, entry_kind::module, *mk, (*more)[j], f.entries);
  for (std::size_t j = 0; j < claiming.size(); ++j)
    if ((*more)[links.size() + j].type == redis_reply::kind::status) f.status[claiming[j]] = remote_status::claimed;
  return f;
}

#endif  // QD_WITH_REMOTE_CACHE

// The caller holds s.mutex. Polls while waiting for a lock do not count their misses again.
QD_FUNC remote_fetch fetch_locked(remote_state& s, entry_kind kind, std::span<const key> keys, bool claim,
                                  bool count_misses = true) {
  claim = claim && !s.options.read_only;
  std::optional<remote_fetch> f;
#if defined(QD_WITH_REMOTE_CACHE)
  bool faulted = false;
  if (!keys.empty() && s.scripting) f = fetch_scripted(s, kind, keys, claim, faulted);
  if (!keys.empty() && !f && !faulted && !s.scripting) f = fetch_pipelined(s, kind, keys, claim);
#endif
  if (!f) {
    f.emplace();
    f->status.assign(keys.size(), remote_status::unavailable);
    return std::move(*f);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (f->status[i] == remote_status::claimed && s.held.insert({kind, keys[i]}).second)
      s.locks_taken.fetch_add(1, std::memory_order_relaxed);
    if (count_misses && f->status[i] != remote_status::hit) s.misses.fetch_add(1, std::memory_order_relaxed);
  }
  return std::move(*f);
}

QD_FUNC void keep(remote_state& s, std::vector<remote_entry>& entries) {
  // Entries nobody took (say, a module this process already had) must not pile up.
  constexpr std::size_t max_buffer = std::size_t{256} << 20;
  for (remote_entry& e : entries) {
    if (s.buffer_bytes + e.payload.size() > max_buffer) {
      s.buffer.clear();
      s.buffer_bytes = 0;
    }
    s.buffer_bytes += e.payload.size();
    auto [it, fresh] = s.buffer.try_emplace({e.kind, e.k}, std::move(e.payload));
    if (!fresh) s.buffer_bytes -= e.payload.size();
  }
}

}  // namespace detail

QD_FUNC std::string remote_address::text() const {
  std::string who = user.empty() && password.empty() ? "" : fmt::format("{}:***@", user);
  if (unix_socket) return db ? fmt::format("unix://{}?db={}", path, db) : fmt::format("unix://{}", path);
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return fmt::format("redis://{}{}:{}/{}", who, h, port, db);
}

QD_FUNC remote_address parse_remote_url(std::string_view url) {
  remote_address a;
  auto bad = [&](std::string_view what) {
    return user_error(
        fmt::format("remote_cache '{}': {}; write redis://host:6379/0, redis://:PASSWORD@host:6379/0 "
                    "or unix:///path/to/redis.sock",
                    url, what));
  };
  if (url.starts_with("rediss://"))
    throw bad("TLS (rediss://) is not supported; reach the server through a unix socket or a TLS tunnel");
  if (url.starts_with("unix://")) {
    std::string_view rest = url.substr(7);
    std::size_t q = rest.find('?');
    std::string_view path = rest.substr(0, q);
    if (path.empty() || path[0] != '/') throw bad("a unix socket needs an absolute path (three slashes)");
    a.unix_socket = true;
    a.path = detail::percent_decode(path, url);
    if (q != std::string_view::npos) {
      std::string_view query = rest.substr(q + 1);
      if (!query.starts_with("db=")) throw bad("the only option of a unix socket URL is ?db=N");
      a.db = detail::parse_url_number(query.substr(3), 1000000, "the database", url);
    }
    return a;
  }
  if (!url.starts_with("redis://")) throw bad("it must start with redis:// or unix://");
  std::string_view rest = url.substr(8);
  if (rest.find_first_of("?#") != std::string_view::npos) throw bad("query strings are not supported");
  std::size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view who = rest.substr(0, at);
    std::size_t colon = who.find(':');
    if (colon == std::string_view::npos)
      throw bad("a password is written after a colon (redis://:PASSWORD@host or redis://USER:PASSWORD@host)");
    a.user = detail::percent_decode(who.substr(0, colon), url);
    a.password = detail::percent_decode(who.substr(colon + 1), url);
    rest = rest.substr(at + 1);
  }
  std::size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  if (slash != std::string_view::npos && slash + 1 < rest.size())
    a.db = detail::parse_url_number(rest.substr(slash + 1), 1000000, "the database", url);
  std::string_view port;
  if (hostport.starts_with("[")) {
    std::size_t close = hostport.find(']');
    if (close == std::string_view::npos) throw bad("an IPv6 address needs its closing ']'");
    a.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty() && after[0] != ':') throw bad("unexpected text after the IPv6 address");
    if (!after.empty()) port = after.substr(1);
  } else {
    std::size_t colon = hostport.rfind(':');
    a.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) port = hostport.substr(colon + 1);
    if (a.host.find(':') != std::string::npos) throw bad("write an IPv6 address in brackets: redis://[::1]:6379");
  }
  if (a.host.empty()) throw bad("the host is missing");
  for (char c : a.host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' && c != ':')
      throw bad(fmt::format("the host contains '{}'", c));
  if (!port.empty() || hostport.ends_with(":")) {
    a.port = detail::parse_url_number(port, 65535, "the port", url);
    if (a.port == 0) throw bad("the port must be from 1 to 65535");
  }
  return a;
}

QD_FUNC bool remote_supported() noexcept {
#if defined(QD_WITH_REMOTE_CACHE)
  return true;
#else
  return false;
#endif
}

QD_FUNC void check_remote_options(const remote_options& options) {
  remote_address address = parse_remote_url(options.url);
  if (options.secret.empty() && !options.unauthenticated)
    throw user_error(fmt::format(
        "remote_cache '{}' is set without remote_cache_secret: entries from a shared server are native code, so "
        "they are authenticated with an HMAC under a secret the team shares. Set remote_cache_secret "
        "(QD_REMOTE_CACHE_SECRET), or accept unauthenticated entries with remote_cache_unauthenticated = true "
        "(QD_REMOTE_CACHE_UNAUTHENTICATED=1) on a server only you can write to",
        address.text()));
  if (options.timeout.count() < 1)
    throw user_error(fmt::format("remote_cache_timeout_ms = {}; use 1 or more (milliseconds; the default is 100)",
                                 options.timeout.count()));
}

QD_FUNC remote::remote(remote_options options) : state_(std::make_unique<detail::remote_state>()) {
  detail::remote_state& s = *state_;
  check_remote_options(options);
  s.address = parse_remote_url(options.url);
  if (options.lock_ttl.count() < 1) options.lock_ttl = std::chrono::milliseconds(1);
  if (options.retry_after.count() < 1) options.retry_after = std::chrono::milliseconds(1);
  s.options = std::move(options);
  s.supported = remote_supported();
  if (!s.supported) {
    s.ns = "unsupported";
    s.retry_at = std::numeric_limits<std::int64_t>::max();
    qd::detail::log_fmt(log_level::warn,
                        "remote_cache '{}' is ignored: this build of Quadrants has no remote cache tier (it needs "
                        "hiredis and libsodium: apt-get install libhiredis-dev libsodium-dev, then rebuild)",
                        s.address.text());
    return;
  }
  if (s.options.unauthenticated) {
    s.ns = "unauthenticated";
  } else {
    hmac_tag id = hmac(s.options.secret, {detail::as_bytes("quadrants remote cache namespace")});
    for (int i = 0; i < 8; ++i)
      s.ns += fmt::format("{:02x}", std::to_integer<unsigned>(id[static_cast<std::size_t>(i)]));
  }
  s.prefix = "qd:" + s.ns + ":";
  s.token = detail::make_token();
  s.owner = ::getpid();
}

QD_FUNC remote::~remote() {
#if defined(QD_WITH_REMOTE_CACHE)
  detail::remote_state& s = *state_;
  try {
    std::lock_guard lock(s.mutex);
    detail::adopt_after_fork(s);
    s.warned_fault = true;  // a server gone by the time the program ends is not worth a warning
    std::vector<std::string> names;
    for (const detail::remote_slot& h : s.held) names.push_back(detail::remote_key(s, h.kind, h.k) + ":lock");
    std::vector<detail::remote_command> commands;
    for (const std::string& n : names) commands.push_back({"EVAL", detail::release_script, "1", n, s.token});
    // This process's counters, for qd-cache stats (read-only processes write nothing).
    std::string stats_key = s.prefix + "stats";
    std::vector<std::pair<const char*, std::string>> counters = {
        {"hits", std::to_string(s.hits.load())},
        {"misses", std::to_string(s.misses.load())},
        {"stores", std::to_string(s.stores.load())},
        {"rejected", std::to_string(s.rejected.load())},
        {"errors", std::to_string(s.errors.load())},
        {"bytes_read", std::to_string(s.bytes_read.load())},
        {"bytes_written", std::to_string(s.bytes_written.load())},
        {"lock_waits", std::to_string(s.waited.load())},
        {"processes", "1"}};
    bool used = s.round_trips.load() > 0;
    if (used && !s.options.read_only)
      for (auto& [field, value] : counters)
        if (value != "0") commands.push_back({"HINCRBY", stats_key, field, value});
    if (!commands.empty() && s.ctx) detail::round_trip(s, commands);
    if (s.ctx) redisFree(s.ctx);
    s.ctx = nullptr;
  } catch (...) {
  }
#endif
}

QD_FUNC const remote_address& remote::address() const noexcept { return state_->address; }
QD_FUNC bool remote::read_only() const noexcept { return state_->options.read_only; }
QD_FUNC const std::string& remote::namespace_id() const noexcept { return state_->ns; }
QD_FUNC std::string remote::redis_key(entry_kind kind, const key& k) const {
  return detail::remote_key(*state_, kind, k);
}
QD_FUNC bool remote::available() const noexcept { return state_->supported && !detail::backing_off(*state_); }

QD_FUNC std::string remote::last_error() const {
  std::lock_guard lock(state_->mutex);
  return state_->last_error;
}

QD_FUNC remote_fetch remote::fetch(entry_kind kind, std::span<const key> keys, bool claim) {
  detail::remote_state& s = *state_;
  try {
    std::lock_guard lock(s.mutex);
    detail::adopt_after_fork(s);
    return detail::fetch_locked(s, kind, keys, claim);
  } catch (...) {
    remote_fetch f;
    f.status.assign(keys.size(), remote_status::unavailable);
    return f;
  }
}

QD_FUNC std::size_t remote::prefetch(entry_kind kind, std::span<const key> keys) {
  detail::remote_state& s = *state_;
  std::vector<remote_entry> received;
  if (keys.empty() || !available()) return 0;
  try {
    std::vector<key> wanted;
    for (const key& k : keys)
      if (std::find(wanted.begin(), wanted.end(), k) == wanted.end()) wanted.push_back(k);
    std::unique_lock lock(s.mutex);
    detail::adopt_after_fork(s);
    if (s.absent.size() > 100000) s.absent.clear();
    remote_fetch f = detail::fetch_locked(s, kind, wanted, true);
    std::vector<key> pending;
    for (std::size_t i = 0; i < wanted.size(); ++i) switch (f.status[i]) {
        case remote_status::hit: break;
        case remote_status::absent:
        case remote_status::claimed: s.absent.insert({kind, wanted[i]}); break;
        case remote_status::locked_elsewhere: pending.push_back(wanted[i]); break;
        case remote_status::unavailable: break;
      }
    received = std::move(f.entries);
    // Another process is compiling some of these: wait for its entries, bounded by the
    // lock's life. Taking over a lock whose holder died ends the wait (compiling it and
    // the rest here), which keeps two waiters from waiting on each other.
    const auto wait_start = std::chrono::steady_clock::now();
    const auto deadline = wait_start + s.options.lock_ttl + s.options.timeout;
    auto pause = std::chrono::milliseconds(2);
    bool warned = false;
    while (!pending.empty()) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      if (!warned && now - wait_start >= std::chrono::seconds(1)) {
        warned = true;
        qd::detail::log_fmt(s.warned_wait.exchange(true) ? log_level::debug : log_level::warn,
                            "remote cache {}: waited 1 s for {} {} entr{} that another process is compiling (it "
                            "holds their compile locks); waiting at most remote_cache_lock_ttl ({}) in all, then "
                            "compiling here",
                            s.address.text(), pending.size(), name(kind), pending.size() == 1 ? "y" : "ies",
                            detail::seconds_text(s.options.lock_ttl));
      }
      lock.unlock();
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 3 / 2 + std::chrono::milliseconds(1), std::chrono::milliseconds(50));
      lock.lock();
      detail::adopt_after_fork(s);
      remote_fetch g = detail::fetch_locked(s, kind, pending, true, false);
      std::vector<key> still;
      bool stop = false;
      for (std::size_t i = 0; i < pending.size(); ++i) switch (g.status[i]) {
          case remote_status::hit: s.waited.fetch_add(1, std::memory_order_relaxed); break;
          case remote_status::claimed: stop = true; [[fallthrough]];
          case remote_status::absent: s.absent.insert({kind, pending[i]}); break;
          case remote_status::locked_elsewhere: still.push_back(pending[i]); break;
          case remote_status::unavailable: stop = true; break;
        }
      for (remote_entry& e : g.entries) received.push_back(std::move(e));
      pending = std::move(still);
      if (stop) break;
    }
    for (const key& k : pending) s.absent.insert({kind, k});  // given up on: compiled here
    detail::keep(s, received);
    return received.size();
  } catch (...) {
    return 0;
  }
}

QD_FUNC std::optional<std::vector<std::byte>> remote::take(entry_kind kind, const key& k) {
  detail::remote_state& s = *state_;
  if (!s.supported) return std::nullopt;
  try {
    std::lock_guard lock(s.mutex);
    detail::adopt_after_fork(s);
    if (auto it = s.buffer.find({kind, k}); it != s.buffer.end()) {
      std::vector<std::byte> payload = std::move(it->second);
      s.buffer_bytes -= payload.size();
      s.buffer.erase(it);
      return payload;
    }
    if (s.absent.erase({kind, k})) return std::nullopt;
    if (detail::backing_off(s)) return std::nullopt;
    remote_fetch f = detail::fetch_locked(s, kind, {&k, 1}, false);
    std::optional<std::vector<std::byte>> found;
    for (remote_entry& e : f.entries)
      if (!found && e.kind == kind && e.k == k) {
        found = std::move(e.payload);
        e.payload.clear();
      }
    std::erase_if(f.entries, [&](const remote_entry& e) { return e.kind == kind && e.k == k; });
    detail::keep(s, f.entries);  // the module a record names comes along
    return found;
  } catch (...) {
    return std::nullopt;
  }
}

QD_FUNC bool remote::put(entry_kind kind, const key& k, std::span<const std::byte> payload) {
  detail::remote_state& s = *state_;
  if (!s.supported || s.options.read_only) return false;
#if defined(QD_WITH_REMOTE_CACHE)
  try {
    std::lock_guard lock(s.mutex);
    detail::adopt_after_fork(s);
    bool held = s.held.erase({kind, k}) > 0;
    std::string name = detail::remote_key(s, kind, k), lock_name = name + ":lock";
    bool writing = detail::steady_ns() >= s.writes_resume_at.load(std::memory_order_relaxed);
    std::vector<std::byte> value;
    std::vector<detail::remote_command> commands;
    if (writing) {
      value = detail::make_value(s, kind, k, payload);
      commands.push_back({"SET", name, std::span<const std::byte>(value)});
      if (!s.registered) commands.push_back({"SADD", "qd:namespaces", s.ns});
    }
    if (held) commands.push_back({"EVAL", detail::release_script, "1", lock_name, s.token});
    if (commands.empty()) return false;
    auto replies = detail::round_trip(s, commands);
    if (!replies || !writing) return false;
    const detail::redis_reply& r = (*replies)[0];
    if (r.type == detail::redis_reply::kind::error) {
      // Full (maxmemory with noeviction), a read-only replica, or no permission: reads
      // go on; writes pause for a back-off.
      std::string why = detail::reply_text(r);
      s.errors.fetch_add(1, std::memory_order_relaxed);
      auto pause = std::max(s.options.retry_after, std::chrono::milliseconds(1000));
      s.writes_resume_at = detail::steady_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(pause).count();
      s.last_error = why;
      qd::detail::log_fmt(s.warned_full.exchange(true) ? log_level::debug : log_level::warn,
                          "remote cache {}: the server refused to store an entry ({}); entries stay local, and "
                          "writes are retried in {} (a full server needs maxmemory-policy allkeys-lru)",
                          s.address.text(), why, detail::seconds_text(pause));
      return false;
    }
    if (commands.size() > 1 && !s.registered) s.registered = true;
    s.stores.fetch_add(1, std::memory_order_relaxed);
    s.bytes_written.fetch_add(value.size(), std::memory_order_relaxed);
    return true;
  } catch (...) {
    return false;
  }
#else
  (void)kind;
  (void)k;
  (void)payload;
  return false;
#endif
}

QD_FUNC std::optional<std::vector<bool>> remote::contains(entry_kind kind, std::span<const key> keys) {
  detail::remote_state& s = *state_;
#if defined(QD_WITH_REMOTE_CACHE)
  try {
    std::lock_guard lock(s.mutex);
    detail::adopt_after_fork(s);
    std::vector<std::string> names;
    for (const key& k : keys) names.push_back(detail::remote_key(s, kind, k));
    std::vector<detail::remote_command> commands;
    for (const std::string& n : names) commands.push_back({"EXISTS", n});
    if (commands.empty()) return std::vector<bool>{};
    auto replies = detail::round_trip(s, commands);
    if (!replies) return std::nullopt;
    std::vector<bool> out;
    for (const detail::redis_reply& r : *replies)
      out.push_back(r.type == detail::redis_reply::kind::integer && r.integer == 1);
    return out;
  } catch (...) {
    return std::nullopt;
  }
#else
  (void)s;
  (void)kind;
  (void)keys;
  return std::nullopt;
#endif
}

QD_FUNC std::optional<remote::server_report> remote::report() {
  detail::remote_state& s = *state_;
#if defined(QD_WITH_REMOTE_CACHE)
  try {
    using kind = detail::redis_reply::kind;
    std::unique_lock lock(s.mutex);
    detail::adopt_after_fork(s);
    std::string stats_key = s.prefix + "stats";
    auto replies = detail::round_trip(s, {{"HGETALL", stats_key}, {"INFO", "server"}, {"INFO", "memory"}});
    if (!replies) return std::nullopt;
    const detail::redis_reply& h = (*replies)[0];
    std::string odd;
    if (h.type != kind::array) odd = fmt::format("HGETALL with {}, not a list of fields", detail::reply_text(h));
    for (int i : {1, 2})
      if (odd.empty() && !(*replies)[static_cast<std::size_t>(i)].is_string())
        odd = fmt::format("INFO with {}, not a text", detail::reply_text((*replies)[static_cast<std::size_t>(i)]));
    if (!odd.empty()) {
      detail::fault(s, "the server answered " + odd + "; is it a Redis server?");
      return std::nullopt;
    }
    server_report rep;
    for (std::size_t i = 0; i + 1 < h.elements.size(); i += 2)
      if (h.elements[i].is_string() && h.elements[i + 1].is_string())
        rep.counters.emplace_back(h.elements[i].str, h.elements[i + 1].str);
    auto field = [&](const detail::redis_reply& r, std::string_view name) -> std::string {
      std::string_view text(r.str);
      std::string needle = std::string(name) + ":";
      std::size_t at = text.find(needle);
      if (at == std::string_view::npos) return {};
      std::size_t end = text.find_first_of("\r\n", at);
      return std::string(text.substr(at + needle.size(), end - at - needle.size()));
    };
    rep.version = field((*replies)[1], "redis_version");
    rep.used_memory = std::strtoull(field((*replies)[2], "used_memory").c_str(), nullptr, 10);
    rep.maxmemory = std::strtoull(field((*replies)[2], "maxmemory").c_str(), nullptr, 10);
    rep.maxmemory_policy = field((*replies)[2], "maxmemory_policy");
    lock.unlock();
    std::optional<std::vector<listed_entry>> entries = list();
    if (!entries) return std::nullopt;
    for (const listed_entry& e : *entries) {
      rep.entries[static_cast<int>(e.kind)] += 1;
      rep.bytes[static_cast<int>(e.kind)] += e.size;
    }
    return rep;
  } catch (...) {
    return std::nullopt;
  }
#else
  (void)s;
  return std::nullopt;
#endif
}

QD_FUNC std::optional<std::vector<remote::listed_entry>> remote::list() {
  detail::remote_state& s = *state_;
#if defined(QD_WITH_REMOTE_CACHE)
  try {
    using kind = detail::redis_reply::kind;
    std::lock_guard lock(s.mutex);
    detail::adopt_after_fork(s);
    // A SCAN of the namespace, then the values' sizes: a page per round trip.
    std::vector<listed_entry> out;
    std::string cursor = "0", pattern = s.prefix + "*";
    do {
      auto page = detail::round_trip(s, {{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}});
      if (!page) return std::nullopt;
      const detail::redis_reply& p = (*page)[0];
      if (p.type != kind::array || p.elements.size() != 2 || !p.elements[0].is_string() ||
          p.elements[1].type != kind::array) {
        detail::fault(s, fmt::format("the server answered SCAN with {}, not a cursor and a list of keys; is it a "
                                     "Redis server?",
                                     detail::reply_text(p)));
        return std::nullopt;
      }
      cursor = p.elements[0].str;
      const std::vector<detail::redis_reply>& names = p.elements[1].elements;
      std::vector<detail::remote_command> sizes;
      std::size_t first = out.size();
      for (const detail::redis_reply& name : names) {
        if (!name.is_string() || !name.str.starts_with(s.prefix)) continue;
        std::string_view rest = std::string_view(name.str).substr(s.prefix.size());  // <kind>:<32 hex>, nothing else
        std::size_t colon = rest.find(':');
        if (colon == std::string_view::npos) continue;
        std::optional<entry_kind> kind_of = entry_kind_from_name(rest.substr(0, colon));
        std::optional<key> k = key::from_hex(rest.substr(colon + 1));
        if (!kind_of || !k) continue;
        out.push_back({*kind_of, *k, 0});
        sizes.push_back({"STRLEN", name.str});
      }
      if (sizes.empty()) continue;
      auto lengths = detail::round_trip(s, sizes);
      if (!lengths) return std::nullopt;
      for (std::size_t i = 0; i < sizes.size(); ++i)
        if ((*lengths)[i].type == kind::integer && (*lengths)[i].integer >= 0)
          out[first + i].size = static_cast<std::uint64_t>((*lengths)[i].integer);
    } while (cursor != "0");
    return out;
  } catch (...) {
    return std::nullopt;
  }
#else
  (void)s;
  return std::nullopt;
#endif
}

QD_FUNC remote_stats remote::stats() const noexcept {
  const detail::remote_state& s = *state_;
  remote_stats r;
  r.hits = s.hits.load(std::memory_order_relaxed);
  r.misses = s.misses.load(std::memory_order_relaxed);
  r.stores = s.stores.load(std::memory_order_relaxed);
  r.rejected = s.rejected.load(std::memory_order_relaxed);
  r.errors = s.errors.load(std::memory_order_relaxed);
  r.bytes_read = s.bytes_read.load(std::memory_order_relaxed);
  r.bytes_written = s.bytes_written.load(std::memory_order_relaxed);
  r.round_trips = s.round_trips.load(std::memory_order_relaxed);
  r.locks_taken = s.locks_taken.load(std::memory_order_relaxed);
  r.waited = s.waited.load(std::memory_order_relaxed);
  return r;
}

}  // namespace qd::inline v0::cache
