// Implementation of cache/remote.hpp. The protocol client is hiredis (blocking, one
// connection per process behind a mutex); the tags are libsodium's HMAC-SHA-256.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
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
#include "quadrants/detail/format.hpp"

#if defined(QD_WITH_REMOTE_CACHE)
#include <hiredis/hiredis.h>
#endif

namespace qd::cache {

namespace detail {

// A value on the server: magic | tag | link | the entry file (header and stored payload).
// The link names the module a record refers to (32 hex digits, zeros for a module), so
// that the fetch script sends the module with the record in the same round trip.
inline constexpr std::string_view remote_magic = "QDR1";
inline constexpr std::size_t remote_link_size = 32;
inline constexpr std::size_t remote_value_header = 4 + hmac_size + remote_link_size;
inline constexpr std::string_view no_link = "00000000000000000000000000000000";

// KEYS: the entries. ARGV: module key prefix, claim ('1'), lock token, lock ttl (ms),
// this namespace, the set of namespaces. Per key: its value, or an integer whose bits say
// 1 = this process holds its lock, 2 = another does, 4 = another secret's namespace has
// it. Then (link, module value or nil) for each distinct module the records name.
// Reads only its KEYS, the locks beside them and the named modules; a lock is taken with
// pcall, so a full or read-only server answers the reads all the same.
inline constexpr std::string_view fetch_script = R"lua(
local out, want, seen = {}, {}, {}
local prefix = 'qd:' .. ARGV[5] .. ':'
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
    if holder == ARGV[3] then bits = 1
    elseif holder then bits = 2
    elseif ARGV[2] == '1' then
      local r = redis.pcall('SET', lock, ARGV[3], 'NX', 'PX', ARGV[4])
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
    out[i] = bits
  end
end
for _, link in ipairs(want) do
  out[#out + 1] = link
  out[#out + 1] = redis.call('GET', ARGV[1] .. link) or false
end
return out
)lua";

// Deletes a lock only if this process still holds it (it may have expired and been retaken).
inline constexpr std::string_view release_script = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
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

#if defined(QD_WITH_REMOTE_CACHE)
struct reply_deleter {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;
#endif

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
  std::string ns, prefix, token;

  std::mutex mutex;  // the connection, the buffer and the sets below
#if defined(QD_WITH_REMOTE_CACHE)
  redisContext* ctx = nullptr;
#endif
  bool scripting = true;  // false once EVAL was refused: two pipelined round trips instead
  bool registered = false;
  std::chrono::milliseconds backoff{0};
  std::atomic<std::int64_t> retry_at{0};         // steady-clock ns; the tier is skipped until then
  std::atomic<std::int64_t> writes_resume_at{0};  // after the server refused a write (full)
  std::string last_error;
  std::atomic<bool> warned_fault{false}, warned_auth{false}, warned_foreign{false}, warned_full{false};

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
    throw user_error(fmt::format("remote_cache '{}': {} '{}' is not a number from 0 to {}; write "
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
    case entry_kind::explain: return std::string(no_link);
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

#if defined(QD_WITH_REMOTE_CACHE)

// Writing to a socket the server closed raises SIGPIPE, which would end the process:
// block it on this thread for the round trip and discard one it raised.
class sigpipe_guard {
 public:
  sigpipe_guard() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;
  ~sigpipe_guard() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGPIPE);
        struct timespec zero = {0, 0};
        while (sigtimedwait(&set, nullptr, &zero) < 0 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
  bool was_pending_ = false;
};

QD_FUNC struct timeval to_timeval(std::chrono::milliseconds d) {
  struct timeval tv;
  tv.tv_sec = static_cast<time_t>(d.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((d.count() % 1000) * 1000);
  return tv;
}

QD_FUNC std::string reply_text(const redisReply* r) {
  if (!r) return "no reply";
  if (r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING)
    return std::string(r->str, std::min<std::size_t>(r->len, 200));
  return fmt::format("a reply of type {}", r->type);
}

// Sends the commands as one pipeline and reads their replies; nullopt after a fault.
QD_FUNC std::optional<std::vector<reply_ptr>> send(remote_state& s, const std::vector<remote_command>& commands);

QD_FUNC bool connect(remote_state& s) {
  struct timeval tv = to_timeval(s.options.timeout);
  s.ctx = s.address.unix_socket ? redisConnectUnixWithTimeout(s.address.path.c_str(), tv)
                                : redisConnectWithTimeout(s.address.host.c_str(), s.address.port, tv);
  if (!s.ctx || s.ctx->err) {
    std::string why = s.ctx ? s.ctx->errstr : "out of memory";
    fault(s, fmt::format("cannot connect ({})", why));
    return false;
  }
  redisSetTimeout(s.ctx, tv);
  std::vector<remote_command> setup;
  std::string db = std::to_string(s.address.db);
  if (!s.address.password.empty()) {
    if (s.address.user.empty()) setup.push_back({"AUTH", s.address.password});
    else setup.push_back({"AUTH", s.address.user, s.address.password});
  }
  if (s.address.db != 0) setup.push_back({"SELECT", db});
  if (setup.empty()) return true;
  auto replies = send(s, setup);
  if (!replies) return false;
  for (auto& r : *replies)
    if (r->type == REDIS_REPLY_ERROR) {
      fault(s, fmt::format("the server refused the connection's set-up ({}); check the password and the "
                           "database number in remote_cache",
                           reply_text(r.get())));
      return false;
    }
  return true;
}

QD_FUNC std::optional<std::vector<reply_ptr>> send(remote_state& s, const std::vector<remote_command>& commands) {
  if (!s.ctx && !connect(s)) return std::nullopt;
  sigpipe_guard guard;
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const remote_command& c : commands) {
    argv.clear();
    lengths.clear();
    for (const remote_arg& a : c) {
      argv.push_back(a.data);
      lengths.push_back(a.size);
    }
    if (redisAppendCommandArgv(s.ctx, static_cast<int>(argv.size()), argv.data(), lengths.data()) != REDIS_OK) {
      fault(s, fmt::format("cannot queue a command ({})", s.ctx->errstr));
      return std::nullopt;
    }
  }
  // The wait for the first reply gets the timeout less the kernel's rounding of socket
  // timeouts (measured up to ~8 ms here), so that a silent server costs at most the
  // timeout; later replies only need to keep coming within it.
  auto first_wait = std::max(s.options.timeout / 2, s.options.timeout - std::chrono::milliseconds(10));
  redisSetTimeout(s.ctx, to_timeval(first_wait));
  std::vector<reply_ptr> replies;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (i == 1) redisSetTimeout(s.ctx, to_timeval(s.options.timeout));
    void* r = nullptr;
    if (redisGetReply(s.ctx, &r) != REDIS_OK || r == nullptr) {
      int err = s.ctx->err;
      std::string why = s.ctx->errstr;
      if (err == REDIS_ERR_IO && (why.find("Resource temporarily unavailable") != std::string::npos ||
                                  why.find("timed out") != std::string::npos))
        why = fmt::format("no answer within remote_cache_timeout_ms = {}", s.options.timeout.count());
      else if (err == REDIS_ERR_EOF || err == REDIS_ERR_IO)
        why = fmt::format("the connection was lost ({})", why);
      else if (err == REDIS_ERR_PROTOCOL)
        why = fmt::format("the server's answer is not the Redis protocol ({})", why);
      fault(s, why);
      return std::nullopt;
    }
    replies.emplace_back(static_cast<redisReply*>(r));
  }
  s.round_trips.fetch_add(1, std::memory_order_relaxed);
  if (s.backoff.count() != 0) {
    s.backoff = std::chrono::milliseconds(0);
    qd::detail::log_fmt(log_level::info, "remote cache {}: reachable again", s.address.text());
  }
  return replies;
}

// A round trip, unless the tier is backing off.
QD_FUNC std::optional<std::vector<reply_ptr>> round_trip(remote_state& s, const std::vector<remote_command>& commands) {
  if (!s.supported || backing_off(s)) return std::nullopt;
  return send(s, commands);
}

QD_FUNC bool is_string(const redisReply* r) { return r && r->type == REDIS_REPLY_STRING; }

QD_FUNC std::span<const std::byte> reply_bytes(const redisReply* r) {
  return {reinterpret_cast<const std::byte*>(r->str), r->len};
}

// Judges one value fetched for (kind, k); hits go to `out`.
QD_FUNC bool accept_value(remote_state& s, entry_kind kind, const key& k, const redisReply* r,
                          std::vector<remote_entry>& out) {
  s.bytes_read.fetch_add(r->len, std::memory_order_relaxed);
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
      qd::detail::log_fmt(log_level::debug, "remote cache {}: refused {} {}: {}", s.address.text(), name(kind),
                          k.hex(), why);
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

// The script fetch; nullopt with `scripting` cleared when the server refuses EVAL.
QD_FUNC std::optional<remote_fetch> fetch_scripted(remote_state& s, entry_kind kind, std::span<const key> keys,
                                                   bool claim, bool& faulted) {
  std::vector<std::string> names;
  for (const key& k : keys) names.push_back(remote_key(s, kind, k));
  std::string module_prefix = s.prefix + "module:";
  std::string count = std::to_string(keys.size());
  std::string ttl = std::to_string(s.options.lock_ttl.count());
  remote_command c{"EVAL", fetch_script, count};
  for (const std::string& n : names) c.emplace_back(n);
  c.insert(c.end(), {module_prefix, claim ? "1" : "0", s.token, ttl, s.ns, "qd:namespaces"});
  auto replies = round_trip(s, {c});
  if (!replies) {
    faulted = true;
    return std::nullopt;
  }
  const redisReply* r = (*replies)[0].get();
  if (r->type == REDIS_REPLY_ERROR) {
    std::string text = reply_text(r);
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
  if (r->type != REDIS_REPLY_ARRAY || r->elements < keys.size() || (r->elements - keys.size()) % 2 != 0) {
    fault(s, fmt::format("unexpected answer to the fetch script ({})", reply_text(r)));
    faulted = true;
    return std::nullopt;
  }
  remote_fetch f;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const redisReply* v = r->element[i];
    remote_status status = remote_status::absent;
    if (is_string(v)) {
      if (accept_value(s, kind, keys[i], v, f.entries)) status = remote_status::hit;
    } else if (v->type == REDIS_REPLY_INTEGER) {
      if (v->integer & 1) status = remote_status::claimed;
      else if (v->integer & 2) status = remote_status::locked_elsewhere;
      if (v->integer & 4) note_foreign(s, kind, keys[i]);
    } else {
      fault(s, fmt::format("unexpected answer to the fetch script ({})", reply_text(v)));
      faulted = true;
      return std::nullopt;
    }
    f.status.push_back(status);
  }
  for (std::size_t i = keys.size(); i + 1 < r->elements; i += 2) {
    const redisReply* link = r->element[i];
    const redisReply* v = r->element[i + 1];
    std::optional<key> mk = is_string(link) ? key::from_hex(std::string_view(link->str, link->len)) : std::nullopt;
    if (mk && is_string(v)) accept_value(s, entry_kind::module, *mk, v, f.entries);
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
  auto replies = round_trip(s, first);
  if (!replies) return std::nullopt;
  remote_fetch f;
  std::vector<std::string> links;
  std::vector<remote_command> second;
  std::string ttl = std::to_string(s.options.lock_ttl.count());
  std::vector<std::size_t> claiming;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const redisReply* v = (*replies)[i].get();
    const redisReply* holder = (*replies)[keys.size() + i].get();
    if (is_string(v)) {
      bool ok = accept_value(s, kind, keys[i], v, f.entries);
      f.status.push_back(ok ? remote_status::hit : remote_status::absent);
      if (ok && v->len >= remote_value_header) {
        std::string link(v->str + 4 + hmac_size, remote_link_size);
        if (link != no_link && std::find(links.begin(), links.end(), link) == links.end()) links.push_back(link);
      }
      continue;
    }
    if (is_string(holder)) {
      bool mine = std::string_view(holder->str, holder->len) == s.token;
      f.status.push_back(mine ? remote_status::claimed : remote_status::locked_elsewhere);
    } else {
      f.status.push_back(remote_status::absent);
      if (claim) claiming.push_back(i);
    }
  }
  std::vector<std::string> module_names;
  for (const std::string& l : links) module_names.push_back(s.prefix + "module:" + l);
  for (const std::string& m : module_names) second.push_back({"GET", m});
  for (std::size_t i : claiming) {
    remote_command c{"SET", locks[i], s.token, "NX", "PX"};
    c.emplace_back(ttl);
    second.push_back(std::move(c));
  }
  if (second.empty()) return f;
  auto more = round_trip(s, second);
  if (!more) return f;
  for (std::size_t j = 0; j < links.size(); ++j)
    if (auto mk = key::from_hex(links[j]); mk && is_string((*more)[j].get()))
      accept_value(s, entry_kind::module, *mk, (*more)[j].get(), f.entries);
  for (std::size_t j = 0; j < claiming.size(); ++j) {
    const redisReply* r = (*more)[links.size() + j].get();
    if (r->type == REDIS_REPLY_STATUS) f.status[claiming[j]] = remote_status::claimed;
  }
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
    return user_error(fmt::format("remote_cache '{}': {}; write redis://host:6379/0, redis://:PASSWORD@host:6379/0 "
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
    for (int i = 0; i < 8; ++i) s.ns += fmt::format("{:02x}", std::to_integer<unsigned>(id[static_cast<std::size_t>(i)]));
  }
  s.prefix = "qd:" + s.ns + ":";
  std::random_device rd;
  s.token = fmt::format("{:08x}{:08x}-{}", rd(), rd(), ::getpid());
}

QD_FUNC remote::~remote() {
#if defined(QD_WITH_REMOTE_CACHE)
  detail::remote_state& s = *state_;
  try {
    std::lock_guard lock(s.mutex);
    s.warned_fault = true;  // a server gone by the time the program ends is not worth a warning
    std::vector<std::string> names;
    for (const detail::remote_slot& h : s.held) names.push_back(detail::remote_key(s, h.kind, h.k) + ":lock");
    std::vector<detail::remote_command> commands;
    for (const std::string& n : names) commands.push_back({"EVAL", detail::release_script, "1", n, s.token});
    // This process's counters, for qd-cache stats (read-only processes write nothing).
    std::string stats_key = s.prefix + "stats";
    std::vector<std::pair<const char*, std::string>> counters = {
        {"hits", std::to_string(s.hits.load())},         {"misses", std::to_string(s.misses.load())},
        {"stores", std::to_string(s.stores.load())},     {"rejected", std::to_string(s.rejected.load())},
        {"errors", std::to_string(s.errors.load())},     {"bytes_read", std::to_string(s.bytes_read.load())},
        {"bytes_written", std::to_string(s.bytes_written.load())},
        {"lock_waits", std::to_string(s.waited.load())}, {"processes", "1"}};
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
QD_FUNC std::string remote::redis_key(entry_kind kind, const key& k) const { return detail::remote_key(*state_, kind, k); }
QD_FUNC bool remote::available() const noexcept { return state_->supported && !detail::backing_off(*state_); }

QD_FUNC std::string remote::last_error() const {
  std::lock_guard lock(state_->mutex);
  return state_->last_error;
}

QD_FUNC remote_fetch remote::fetch(entry_kind kind, std::span<const key> keys, bool claim) {
  detail::remote_state& s = *state_;
  try {
    std::lock_guard lock(s.mutex);
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
    auto deadline = std::chrono::steady_clock::now() + s.options.lock_ttl + s.options.timeout;
    auto pause = std::chrono::milliseconds(2);
    while (!pending.empty()) {
      if (std::chrono::steady_clock::now() >= deadline) break;
      lock.unlock();
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 3 / 2 + std::chrono::milliseconds(1), std::chrono::milliseconds(50));
      lock.lock();
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
    const redisReply* r = (*replies)[0].get();
    if (r->type == REDIS_REPLY_ERROR) {
      // Full (maxmemory with noeviction), a read-only replica, or no permission: reads
      // go on; writes pause for a back-off.
      std::string why = detail::reply_text(r);
      s.errors.fetch_add(1, std::memory_order_relaxed);
      auto pause = std::max(s.options.retry_after, std::chrono::milliseconds(1000));
      s.writes_resume_at =
          detail::steady_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(pause).count();
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
    std::vector<std::string> names;
    for (const key& k : keys) names.push_back(detail::remote_key(s, kind, k));
    std::vector<detail::remote_command> commands;
    for (const std::string& n : names) commands.push_back({"EXISTS", n});
    if (commands.empty()) return std::vector<bool>{};
    auto replies = detail::round_trip(s, commands);
    if (!replies) return std::nullopt;
    std::vector<bool> out;
    for (auto& r : *replies) out.push_back(r->type == REDIS_REPLY_INTEGER && r->integer == 1);
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
    std::unique_lock lock(s.mutex);
    std::string stats_key = s.prefix + "stats";
    auto replies = detail::round_trip(s, {{"HGETALL", stats_key}, {"INFO", "server"}, {"INFO", "memory"}});
    if (!replies) return std::nullopt;
    server_report rep;
    const redisReply* h = (*replies)[0].get();
    if (h->type == REDIS_REPLY_ARRAY)
      for (std::size_t i = 0; i + 1 < h->elements; i += 2)
        if (detail::is_string(h->element[i]) && detail::is_string(h->element[i + 1]))
          rep.counters.emplace_back(std::string(h->element[i]->str, h->element[i]->len),
                                    std::string(h->element[i + 1]->str, h->element[i + 1]->len));
    auto field = [&](const redisReply* r, std::string_view name) -> std::string {
      if (!detail::is_string(r) && !(r && r->type == REDIS_REPLY_STATUS)) return {};
      std::string_view text(r->str, r->len);
      std::string needle = std::string(name) + ":";
      std::size_t at = text.find(needle);
      if (at == std::string_view::npos) return {};
      std::size_t end = text.find_first_of("\r\n", at);
      return std::string(text.substr(at + needle.size(), end - at - needle.size()));
    };
    rep.version = field((*replies)[1].get(), "redis_version");
    rep.used_memory = std::strtoull(field((*replies)[2].get(), "used_memory").c_str(), nullptr, 10);
    rep.maxmemory = std::strtoull(field((*replies)[2].get(), "maxmemory").c_str(), nullptr, 10);
    rep.maxmemory_policy = field((*replies)[2].get(), "maxmemory_policy");
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
    std::lock_guard lock(s.mutex);
    // A SCAN of the namespace, then the values' sizes: a page per round trip.
    std::vector<listed_entry> out;
    std::string cursor = "0", pattern = s.prefix + "*";
    do {
      auto page = detail::round_trip(s, {{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}});
      if (!page) return std::nullopt;
      const redisReply* p = (*page)[0].get();
      if (p->type != REDIS_REPLY_ARRAY || p->elements != 2 || !detail::is_string(p->element[0]) ||
          p->element[1]->type != REDIS_REPLY_ARRAY)
        return std::nullopt;
      cursor.assign(p->element[0]->str, p->element[0]->len);
      const redisReply* names = p->element[1];
      std::vector<detail::remote_command> sizes;
      std::size_t first = out.size();
      for (std::size_t i = 0; i < names->elements; ++i) {
        if (!detail::is_string(names->element[i])) continue;
        std::string_view n(names->element[i]->str, names->element[i]->len);
        std::string_view rest = n.substr(s.prefix.size());  // <kind>:<32 hex>, nothing else
        std::size_t colon = rest.find(':');
        if (colon == std::string_view::npos) continue;
        std::optional<entry_kind> kind = entry_kind_from_name(rest.substr(0, colon));
        std::optional<key> k = key::from_hex(rest.substr(colon + 1));
        if (!kind || !k) continue;
        out.push_back({*kind, *k, 0});
        sizes.push_back({"STRLEN", n});
      }
      if (sizes.empty()) continue;
      auto lengths = detail::round_trip(s, sizes);
      if (!lengths) return std::nullopt;
      for (std::size_t i = 0; i < sizes.size(); ++i)
        if ((*lengths)[i]->type == REDIS_REPLY_INTEGER)
          out[first + i].size = static_cast<std::uint64_t>((*lengths)[i]->integer);
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

}  // namespace qd::cache
