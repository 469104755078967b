// qd-cache: inspect, verify and clean the Quadrants offline cache.
// Works on the files alone, so it is safe to run while programs use the cache.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/cache/key_recipe.hpp"
#include "quadrants/cache/records.hpp"
#include "quadrants/cache/remote.hpp"
#include "quadrants/cache/store.hpp"

namespace {

using namespace qd::cache;

constexpr const char* usage_text =
    "usage: qd-cache [--root DIR] [--remote URL] COMMAND\n"
    "\n"
    "commands:\n"
    "  path                        print the cache directory\n"
    "  stats                       entries, bytes, oldest and newest use, per kind;\n"
    "                              with a remote tier, its entries and counters too\n"
    "  list                        one line per entry: kind, key, bytes, last use, path\n"
    "  verify [--fix]              check the directories as programs do, and every entry;\n"
    "                              --fix removes bad entries and repairs what it can\n"
    "                              (exit status 1 while problems remain)\n"
    "  clean                       remove every entry\n"
    "  clean --older-than AGE      remove entries unused for AGE (e.g. 30m, 12h, 7d, 2w)\n"
    "  clean --to-size SIZE        remove least recently used entries down to SIZE\n"
    "                              (bytes, or with K, M, G, T: 500M, 1.5G; powers of 1024)\n"
    "  push                        upload the valid local entries the remote tier lacks\n"
    "  pull                        download (and validate) the remote entries missing here\n"
    "  explain NAME|KEY [--dot]    what a cached kernel is made of: its constructs, what each\n"
    "                              recomputes, the split decision and why (kernel.explain()),\n"
    "                              and the records of each variant compiled (whole, split,\n"
    "                              coverage); or with --dot the same as a Graphviz graph; by\n"
    "                              kernel name, by the 32-hex key of one of its entries, or by\n"
    "                              an offload's entry point (qd_o<32 hex>)\n"
    "\n"
    "The remote tier is --remote, else $QD_REMOTE_CACHE (redis://host:port/db or\n"
    "unix:///path.sock), with $QD_REMOTE_CACHE_SECRET (or QD_REMOTE_CACHE_UNAUTHENTICATED=1).\n"
    "\n"
    "The directory is --root, else $QD_OFFLINE_CACHE_FILE_PATH, else\n"
    "$XDG_CACHE_HOME/quadrants/qdcache, else ~/.cache/quadrants/qdcache.\n";

int usage_error(std::string_view message) {
  fmt::print(stderr, "qd-cache: {}\n\n{}", message, usage_text);
  return 2;
}

// The kernels whose explanation the cache holds, by name, by the key of one of their
// entries (an explanation, a record), or by an offload's entry point (qd_o<32 hex>, as a
// profiler or a compiler log names it). Each kernel is printed once, newest first: its
// latest explanation and the records of every variant a process compiled (a print_ir or
// coverage run adds the whole kernel's). Exit status 1 when none.
int cmd_explain(const std::string& root, const std::string& what, bool dot) {
  std::optional<key> wanted = what.size() == 32 ? key::from_hex(what) : offload_of_entry(what);
  // The variants of one kernel share its `explained` key; newest first.
  struct variant {
    entry_info entry;
    explain_record record;
  };
  std::vector<variant> all;
  store local({.root = root, .max_size = 0});
  for (entry_info& e : list_entries(root)) {
    if (e.kind != entry_kind::explain) continue;
    std::optional<std::vector<std::byte>> bytes = local.load(entry_kind::explain, e.k);
    if (!bytes) continue;  // invalid: `qd-cache verify` reports it
    std::optional<explain_record> r = decode_explain_record(*bytes);
    if (!r) continue;  // written by another version
    all.push_back({std::move(e), std::move(*r)});
  }
  std::sort(all.begin(), all.end(),
            [](const variant& a, const variant& b) { return a.record.written > b.record.written; });
  std::vector<std::vector<variant>> kernels;
  for (variant& v : all) {
    auto same = [&](const std::vector<variant>& k) { return k.front().record.explained == v.record.explained; };
    auto it = std::find_if(kernels.begin(), kernels.end(), same);
    if (it == kernels.end()) it = kernels.insert(kernels.end(), std::vector<variant>{});
    it->push_back(std::move(v));
  }
  int shown = 0;
  for (const std::vector<variant>& k : kernels) {
    bool match = false;
    for (const variant& v : k) {
      match |= v.record.kernel == what;
      if (wanted)
        match |= v.entry.k == *wanted ||
                 std::find(v.record.keys.begin(), v.record.keys.end(), *wanted) != v.record.keys.end();
    }
    if (!match) continue;
    if (shown++ > 0) fmt::print("\n");
    if (dot) {
      fmt::print("{}", k.front().record.dot);
      continue;
    }
    fmt::print("{}", k.front().record.text);
    for (const variant& v : k) {
      fmt::print("  cached as {} record{} ({}):", v.record.keys.size(), v.record.keys.size() == 1 ? "" : "s",
                 v.record.variant);
      for (const key& r : v.record.keys) fmt::print(" {}", r.hex());
      fmt::print("\n");
    }
    for (const variant& v : k) fmt::print("  explanation entry {}\n", v.entry.path);
  }
  if (shown == 0) {
    fmt::print(stderr,
               "qd-cache: no kernel named or keyed '{}' in {} (explanations are stored when a process compiles a "
               "kernel; entries from before that, or from a read-only cache, have none)\n",
               what, root);
    return 1;
  }
  return 0;
}

// "12h" -> seconds; units s, m, h, d, w are required.
std::optional<std::int64_t> parse_duration(std::string_view text) {
  if (text.size() < 2) return std::nullopt;
  std::int64_t unit = 0;
  switch (text.back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    case 'w': unit = 7 * 86400; break;
    default: return std::nullopt;
  }
  std::string number(text.substr(0, text.size() - 1));
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || errno != 0 || !(value >= 0) || value * static_cast<double>(unit) > 1e15)
    return std::nullopt;
  return static_cast<std::int64_t>(value * static_cast<double>(unit));
}

// "500M" -> bytes; K, M, G, T are powers of 1024, optionally followed by "B" or "iB".
std::optional<std::uint64_t> parse_size(std::string_view text) {
  if (text.ends_with("iB"))
    text.remove_suffix(2);
  else if (text.ends_with("B") || text.ends_with("b"))
    text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  double unit = 1;
  switch (text.back()) {
    case 'K':
    case 'k': unit = 1024.0; break;
    case 'M':
    case 'm': unit = 1024.0 * 1024; break;
    case 'G':
    case 'g': unit = 1024.0 * 1024 * 1024; break;
    case 'T':
    case 't': unit = 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
  }
  if (unit != 1) text.remove_suffix(1);
  std::string number(text);
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || errno != 0 || !(value >= 0) || value * unit > 1.8e19)
    return std::nullopt;
  return static_cast<std::uint64_t>(std::llround(value * unit));
}

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int u = 0;
  while (value >= 1024 && u < 4) {
    value /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[u]);
}

std::string utc_time(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (!::gmtime_r(&t, &tm)) return "?";
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

std::string count(std::uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

int cmd_stats(const std::string& root) {
  struct totals {
    std::uint64_t entries = 0, bytes = 0;
    std::int64_t oldest = 0, newest = 0;
    void add(const entry_info& e) {
      oldest = entries ? std::min(oldest, e.last_use) : e.last_use;
      newest = entries ? std::max(newest, e.last_use) : e.last_use;
      ++entries;
      bytes += e.file_size;
    }
  };
  std::map<entry_kind, totals> by_kind;
  totals all;
  for (const entry_info& e : list_entries(root)) {
    by_kind[e.kind].add(e);
    all.add(e);
  }
  auto row = [](std::string_view label, const totals& t) {
    fmt::print("{:<8} {:>8} {:>14} {:>11}  {:<19}  {}\n", label, t.entries, t.bytes, human_bytes(t.bytes),
               t.entries ? utc_time(t.oldest) : "-", t.entries ? utc_time(t.newest) : "-");
  };
  fmt::print("root     {}\n", root);
  fmt::print("{:<8} {:>8} {:>14} {:>11}  {:<19}  {}\n", "kind", "entries", "bytes", "", "oldest use (UTC)",
             "newest use (UTC)");
  for (entry_kind kind : all_entry_kinds) row(name(kind), by_kind[kind]);
  row("total", all);
  return 0;
}

int cmd_list(const std::string& root) {
  std::vector<entry_info> entries = list_entries(root);
  std::sort(entries.begin(), entries.end(), [](const entry_info& a, const entry_info& b) {
    return a.last_use != b.last_use ? a.last_use > b.last_use : a.path < b.path;
  });
  for (const entry_info& e : entries)
    fmt::print("{:<8} {} {:>12}  {}  {}\n", name(e.kind), e.k.hex(), e.file_size, utc_time(e.last_use), e.path);
  return 0;
}

int cmd_verify(const std::string& root, bool fix) {
  // The root and kind directories first, by the store's own trust rules.
  std::uint64_t layout_bad = 0;
  for (const layout_problem& p : check_layout(root, fix)) {
    layout_bad += !p.fixed;
    fmt::print("{} {}: {}\n", p.fixed ? "fixed   " : "bad     ", p.path, p.problem);
  }
  std::uint64_t checked = 0, bad = 0, removed = 0;
  for (const entry_info& e : list_entries(root)) {
    ++checked;
    std::string why;
    if (verify_entry(e.path, &why)) continue;
    ++bad;
    std::error_code ec;
    if (fix && std::filesystem::remove_all(e.path, ec) != static_cast<std::uintmax_t>(-1) && !ec) {
      ++removed;
      fmt::print("removed  {}: {}\n", e.path, why);
    } else {
      fmt::print("bad      {}: {}{}\n", e.path, why, fix ? fmt::format(" (cannot remove: {})", ec.message()) : "");
    }
  }
  fmt::print("{} checked, {} bad, {} removed\n", count(checked, "entry", "entries"), bad, removed);
  if (layout_bad) fmt::print("{} with the cache directory remain\n", count(layout_bad, "problem", "problems"));
  return bad > removed || layout_bad ? 1 : 0;
}

void print_clean(const clean_result& r) {
  fmt::print("removed {} ({}) and {}; {} ({}) remain\n", count(r.removed_entries, "entry", "entries"),
             human_bytes(r.removed_bytes),
             count(r.removed_temporaries, "stale temporary file", "stale temporary files"),
             count(r.remaining_entries, "entry", "entries"), human_bytes(r.remaining_bytes));
}

// The remote tier from --remote or the environment; nullopt (with a message) when unusable.
std::optional<remote_options> remote_from(const std::optional<std::string>& url_option) {
  const char* env_url = std::getenv("QD_REMOTE_CACHE");
  std::string url = url_option ? *url_option : env_url ? env_url : "";
  if (url.empty()) return std::nullopt;
  remote_options o;
  o.url = url;
  if (const char* secret = std::getenv("QD_REMOTE_CACHE_SECRET")) o.secret = secret;
  if (const char* open = std::getenv("QD_REMOTE_CACHE_UNAUTHENTICATED")) {
    std::string v = open;
    o.unauthenticated = v == "1" || v == "true" || v == "on" || v == "yes";
  }
  o.timeout = std::chrono::milliseconds(2000);  // a tool can wait longer than a launch
  return o;
}

int cmd_remote_stats(remote_options options) {
  options.read_only = true;  // looking adds nothing to the counters
  remote tier(options);
  fmt::print("\nremote   {} (namespace {})\n", tier.address().text(), tier.namespace_id());
  std::optional<remote::server_report> r = tier.report();
  if (!r) {
    fmt::print("unreachable: {}\n", tier.last_error());
    return 1;
  }
  fmt::print("server   Redis {}, {} used of {} (maxmemory-policy {})\n", r->version, human_bytes(r->used_memory),
             r->maxmemory ? human_bytes(r->maxmemory) : std::string("no limit"), r->maxmemory_policy);
  std::uint64_t entries = 0, bytes = 0;
  fmt::print("{:<8} {:>8} {:>14} {:>11}\n", "kind", "entries", "bytes", "");
  for (entry_kind kind : all_entry_kinds) {
    auto i = static_cast<std::size_t>(kind);
    fmt::print("{:<8} {:>8} {:>14} {:>11}\n", name(kind), r->entries[i], r->bytes[i], human_bytes(r->bytes[i]));
    entries += r->entries[i];
    bytes += r->bytes[i];
  }
  fmt::print("{:<8} {:>8} {:>14} {:>11}\n", "total", entries, bytes, human_bytes(bytes));
  // Added by every process that used this namespace, when it ended.
  std::map<std::string, std::string> counters(r->counters.begin(), r->counters.end());
  auto get = [&](const char* field) { return counters.count(field) ? counters[field] : std::string("0"); };
  fmt::print(
      "counters (all processes): hits {}, misses {}, stores {}, rejected {}, errors {}, lock waits {}, "
      "bytes read {}, bytes written {}, processes {}\n",
      get("hits"), get("misses"), get("stores"), get("rejected"), get("errors"), get("lock_waits"), get("bytes_read"),
      get("bytes_written"), get("processes"));
  return 0;
}

// Uploads every valid local entry the server lacks: a compile-only build machine warms
// the shared tier with it.
int cmd_push(const std::string& root, const remote_options& options) {
  remote tier(options);
  store local({.root = root, .max_size = 0});
  std::uint64_t checked = 0, uploaded = 0, present = 0, bad = 0, failed = 0, bytes = 0;
  std::vector<entry_info> entries = list_entries(root);
  constexpr std::size_t batch = 256;
  for (std::size_t start = 0; start < entries.size(); start += batch) {
    std::size_t end = std::min(entries.size(), start + batch);
    for (entry_kind kind : all_entry_kinds) {
      std::vector<const entry_info*> group;
      std::vector<key> keys;
      for (std::size_t i = start; i < end; ++i)
        if (entries[i].kind == kind) {
          group.push_back(&entries[i]);
          keys.push_back(entries[i].k);
        }
      if (keys.empty()) continue;
      std::optional<std::vector<bool>> on_server = tier.contains(kind, keys);
      if (!on_server) {
        fmt::print(stderr, "qd-cache: {} is unreachable: {}\n", tier.address().text(), tier.last_error());
        return 1;
      }
      for (std::size_t j = 0; j < group.size(); ++j) {
        ++checked;
        if ((*on_server)[j]) {
          ++present;
          continue;
        }
        std::optional<std::vector<std::byte>> payload = local.load(kind, group[j]->k);
        if (!payload) {
          ++bad;
          continue;
        }
        if (tier.put(kind, group[j]->k, *payload)) {
          ++uploaded;
          bytes += group[j]->file_size;
        } else {
          ++failed;
        }
      }
    }
  }
  fmt::print("{} checked, {} uploaded ({}), {} already there, {} invalid locally, {} failed\n",
             count(checked, "entry", "entries"), uploaded, human_bytes(bytes), present, bad, failed);
  return failed ? 1 : 0;
}

// Downloads every entry of the namespace that the local root lacks: a GPU node warms its
// disk before a job. Each is validated (HMAC, then as a disk entry) before it is written.
int cmd_pull(const std::string& root, remote_options options) {
  options.read_only = true;
  remote tier(options);
  std::optional<std::vector<remote::listed_entry>> listed = tier.list();
  if (!listed) {
    fmt::print(stderr, "qd-cache: {} is unreachable: {}\n", tier.address().text(), tier.last_error());
    return 1;
  }
  store local({.root = root, .max_size = 0});
  if (!local.writable()) {
    fmt::print(stderr, "qd-cache: cannot write the cache directory {}\n", root);
    return 1;
  }
  std::uint64_t listed_count = listed->size(), present = 0, downloaded = 0, refused = 0;
  for (entry_kind kind : all_entry_kinds) {
    std::vector<key> wanted;
    for (const remote::listed_entry& e : *listed)
      if (e.kind == kind) {
        if (std::filesystem::exists(entry_path(root, kind, e.k)))
          ++present;
        else
          wanted.push_back(e.k);
      }
    for (std::size_t start = 0; start < wanted.size(); start += 256) {
      std::span<const key> batch(wanted.data() + start, std::min<std::size_t>(256, wanted.size() - start));
      remote_fetch f = tier.fetch(kind, batch, false);
      for (remote_status st : f.status) {
        if (st == remote_status::unavailable) {
          fmt::print(stderr, "qd-cache: {} is unreachable: {}\n", tier.address().text(), tier.last_error());
          return 1;
        }
        if (st != remote_status::hit) ++refused;
      }
      for (const remote_entry& e : f.entries)  // records come with their modules
        if (e.kind == kind && local.save(e.kind, e.k, e.payload)) ++downloaded;
    }
  }
  fmt::print("{} on the server, {} downloaded, {} already here, {} refused (bad tag or invalid)\n",
             count(listed_count, "entry", "entries"), downloaded, present, refused);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> root, remote_url;
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--root") {
      if (++i == argc) return usage_error("--root needs a directory");
      root = argv[i];
    } else if (a.starts_with("--root=")) {
      root = std::string(a.substr(7));
    } else if (a == "--remote") {
      if (++i == argc) return usage_error("--remote needs a URL");
      remote_url = argv[i];
    } else if (a.starts_with("--remote=")) {
      remote_url = std::string(a.substr(9));
    } else if (a == "-h" || a == "--help" || a == "help") {
      fmt::print("{}", usage_text);
      return 0;
    } else {
      args.push_back(a);
    }
  }
  if (args.empty()) return usage_error("no command");
  if (!root) root = default_root();
  if (root->empty()) return usage_error("no cache directory: pass --root, or set HOME");
  while (root->size() > 1 && root->back() == '/') root->pop_back();

  std::string_view command = args[0];
  std::vector<std::string_view> options(args.begin() + 1, args.end());
  if (command == "path" && options.empty()) {
    fmt::print("{}\n", *root);
    return 0;
  }
  std::optional<remote_options> tier;
  try {
    tier = remote_from(remote_url);
    if (tier) check_remote_options(*tier);
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (command == "stats" && options.empty()) {
    int rc = cmd_stats(*root);
    return tier ? std::max(rc, cmd_remote_stats(*tier)) : rc;
  }
  if ((command == "push" || command == "pull") && options.empty()) {
    if (!tier) return usage_error(fmt::format("{} needs a remote tier: --remote URL or QD_REMOTE_CACHE", command));
    if (!remote_supported()) {
      fmt::print(stderr, "qd-cache: this build has no remote cache tier (hiredis, libsodium)\n");
      return 1;
    }
    return command == "push" ? cmd_push(*root, *tier) : cmd_pull(*root, *tier);
  }
  if (command == "list" && options.empty()) return cmd_list(*root);
  if (command == "explain") {
    bool dot = false;
    std::vector<std::string_view> names;
    for (std::string_view o : options) {
      if (o == "--dot")
        dot = true;
      else
        names.push_back(o);
    }
    if (names.size() != 1 || names[0].empty())
      return usage_error("explain takes one kernel name or key, and optionally --dot");
    return cmd_explain(*root, std::string(names[0]), dot);
  }
  if (command == "verify") {
    if (options.size() > 1 || (options.size() == 1 && options[0] != "--fix"))
      return usage_error("verify takes only --fix");
    return cmd_verify(*root, options.size() == 1);
  }
  if (command == "clean") {
    std::optional<std::int64_t> older_than;
    std::optional<std::uint64_t> to_size;
    for (std::size_t i = 0; i < options.size(); ++i) {
      if (options[i] == "--older-than" && i + 1 < options.size()) {
        older_than = parse_duration(options[++i]);
        if (!older_than) return usage_error(fmt::format("bad age '{}' (try 12h or 7d)", options[i]));
      } else if (options[i] == "--to-size" && i + 1 < options.size()) {
        to_size = parse_size(options[++i]);
        if (!to_size) return usage_error(fmt::format("bad size '{}' (try 500M or 2G)", options[i]));
      } else {
        return usage_error(fmt::format("unknown clean option '{}'", options[i]));
      }
    }
    if (!std::filesystem::is_directory(*root)) {
      fmt::print("{} does not exist; nothing to clean\n", *root);
      return 0;
    }
    if (older_than)
      print_clean(remove_unused_since(*root, static_cast<std::int64_t>(std::time(nullptr)) - *older_than));
    if (to_size) print_clean(evict_to_size(*root, *to_size));
    if (!older_than && !to_size) print_clean(evict_to_size(*root, 0));
    return 0;
  }
  return usage_error(fmt::format("unknown command or arguments: {}", command));
}
