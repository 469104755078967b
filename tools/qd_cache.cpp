// qd-cache: inspect, verify and clean the Quadrants offline cache.
// Works on the files alone, so it is safe to run while programs use the cache.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/cache/store.hpp"

namespace {

using namespace qd::cache;

constexpr const char* usage_text =
    "usage: qd-cache [--root DIR] COMMAND\n"
    "\n"
    "commands:\n"
    "  path                        print the cache directory\n"
    "  stats                       entries, bytes, oldest and newest use, per kind\n"
    "  list                        one line per entry: kind, key, bytes, last use, path\n"
    "  verify [--fix]              check the directories as programs do, and every entry;\n"
    "                              --fix removes bad entries and repairs what it can\n"
    "                              (exit status 1 while problems remain)\n"
    "  clean                       remove every entry\n"
    "  clean --older-than AGE      remove entries unused for AGE (e.g. 30m, 12h, 7d, 2w)\n"
    "  clean --to-size SIZE        remove least recently used entries down to SIZE\n"
    "                              (bytes, or with K, M, G, T: 500M, 1.5G; powers of 1024)\n"
    "\n"
    "The directory is --root, else $QD_OFFLINE_CACHE_FILE_PATH, else\n"
    "$XDG_CACHE_HOME/quadrants/qdcache, else ~/.cache/quadrants/qdcache.\n";

int usage_error(std::string_view message) {
  fmt::print(stderr, "qd-cache: {}\n\n{}", message, usage_text);
  return 2;
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
  if (end != number.c_str() + number.size() || errno != 0 || !(value >= 0) || value * unit > 1e15)
    return std::nullopt;
  return static_cast<std::int64_t>(value * static_cast<double>(unit));
}

// "500M" -> bytes; K, M, G, T are powers of 1024, optionally followed by "B" or "iB".
std::optional<std::uint64_t> parse_size(std::string_view text) {
  if (text.ends_with("iB")) text.remove_suffix(2);
  else if (text.ends_with("B") || text.ends_with("b")) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  double unit = 1;
  switch (text.back()) {
    case 'K': case 'k': unit = 1024.0; break;
    case 'M': case 'm': unit = 1024.0 * 1024; break;
    case 'G': case 'g': unit = 1024.0 * 1024 * 1024; break;
    case 'T': case 't': unit = 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
  }
  if (unit != 1) text.remove_suffix(1);
  std::string number(text);
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || errno != 0 || !(value >= 0) ||
      value * unit > 1.8e19)
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
             human_bytes(r.removed_bytes), count(r.removed_temporaries, "stale temporary file", "stale temporary files"),
             count(r.remaining_entries, "entry", "entries"), human_bytes(r.remaining_bytes));
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> root;
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--root") {
      if (++i == argc) return usage_error("--root needs a directory");
      root = argv[i];
    } else if (a.starts_with("--root=")) {
      root = std::string(a.substr(7));
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
  if (command == "stats" && options.empty()) return cmd_stats(*root);
  if (command == "list" && options.empty()) return cmd_list(*root);
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
    if (older_than) print_clean(remove_unused_since(*root, static_cast<std::int64_t>(std::time(nullptr)) - *older_than));
    if (to_size) print_clean(evict_to_size(*root, *to_size));
    if (!older_than && !to_size) print_clean(evict_to_size(*root, 0));
    return 0;
  }
  return usage_error(fmt::format("unknown command or arguments: {}", command));
}
