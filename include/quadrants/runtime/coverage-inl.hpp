// Implementation of runtime/coverage.hpp.
#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>
#include <tuple>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/log.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/ir/walk.hpp"
#include "quadrants/runtime/coverage.hpp"
#include "quadrants/runtime/program.hpp"
#include "quadrants/runtime/text_file.hpp"

namespace qd::detail {

QD_FUNC ir::function instrument_for_coverage(const ir::function& src, std::vector<coverage_probe>& probes) {
  ir::function fn = src;
  const auto cov = static_cast<std::int32_t>(fn.params.size());
  fn.params.push_back({true, dtype::u8, 1, false});
  fn.locs.resize(fn.nodes.size());
  auto add = [&](ir::node n, std::int32_t block, ir::source_loc loc) {
    const auto i = static_cast<ir::id>(fn.nodes.size());
    fn.nodes.push_back(n);
    fn.node_block.push_back(block);
    fn.locs.push_back(loc);
    return i;
  };
  auto probe = [&](std::int32_t block, coverage_probe what, std::vector<ir::id>& out) {
    const auto slot = static_cast<std::int64_t>(probes.size());
    probes.push_back(what);
    const ir::source_loc loc{what.file, what.line};
    const ir::id index = add({.code = ir::op::constant, .type = dtype::i32, .imm = slot}, block, loc);
    const ir::id one = add({.code = ir::op::constant, .type = dtype::u8, .imm = 1}, block, loc);
    const auto list = static_cast<std::int32_t>(fn.lists.size());
    fn.lists.push_back(index);
    const ir::id store = add({.code = ir::op::global_store, .type = dtype::u8, .a = one, .param = cov,
                              .list_begin = list, .list_size = 1},
                             block, loc);
    out.insert(out.end(), {index, one, store});
  };
  // Reachable blocks, and each if_'s ordinal among the if_s on its line (BRDA's block).
  std::vector<bool> reachable(fn.blocks.size(), false);
  reachable[0] = true;
  std::vector<std::int32_t> ordinal(fn.nodes.size(), -1);
  std::map<std::pair<std::string, std::uint32_t>, std::int32_t> ifs_on_line;
  ir::walk(src, 0, [&](ir::id i, int) {
    const ir::node& n = src.at(i);
    if (n.block0 >= 0) reachable[static_cast<std::size_t>(n.block0)] = true;
    if (n.block1 >= 0) reachable[static_cast<std::size_t>(n.block1)] = true;
    const ir::source_loc l = src.location(i);
    if (n.code == ir::op::if_ && l.known()) ordinal[static_cast<std::size_t>(i)] = ifs_on_line[{l.file, l.line}]++;
  });
  for (std::size_t b = 0; b < src.blocks.size(); ++b) {
    if (!reachable[b]) continue;
    const ir::id owner = src.block_owner[b];
    const ir::node* o = owner == ir::none ? nullptr : &src.at(owner);
    if (o && o->code == ir::op::while_ && o->block0 == static_cast<std::int32_t>(b)) continue;  // a condition
    const std::vector<ir::id>& old = src.blocks[b];
    std::vector<ir::id> out;
    std::size_t j = 0;
    if (o && o->code == ir::op::range_for)  // its loop indices come first
      for (; j < old.size() && j < static_cast<std::size_t>(o->imm); ++j) out.push_back(old[j]);
    const auto block = static_cast<std::int32_t>(b);
    if (o && o->code == ir::op::if_ && ordinal[static_cast<std::size_t>(owner)] >= 0) {
      const ir::source_loc l = src.location(owner);
      probe(block, {l.file, l.line, ordinal[static_cast<std::size_t>(owner)], o->block1 == block ? 1 : 0}, out);
    }
    ir::source_loc last{};
    // A top-level loop's line is probed inside its body (it ran when an iteration did): a
    // probe before it would make a one-thread launch of its own.
    if (o && o->code == ir::op::range_for && src.is_top_level(owner) && src.location(owner).known()) {
      last = src.location(owner);
      probe(block, {last.file, last.line}, out);
    }
    for (; j < old.size(); ++j) {
      const ir::source_loc l = src.location(old[j]);
      if (b == 0 && src.at(old[j]).code == ir::op::range_for) {
        last = l;
        out.push_back(old[j]);
        continue;
      }
      if (l.known() && !(l == last)) {
        probe(block, {l.file, l.line}, out);
        last = l;
      }
      out.push_back(old[j]);
    }
    fn.blocks[b] = std::move(out);
  }
  return fn;
}

namespace coverage_parts {

// Hit counts by file, then line; branch counts by file, then (line, block, branch).
struct counts {
  std::map<std::string, std::map<std::uint32_t, std::uint64_t>> lines;
  std::map<std::string, std::map<std::tuple<std::uint32_t, std::int32_t, std::int32_t>, std::uint64_t>> branches;
  bool empty() const { return lines.empty() && branches.empty(); }
  void add(const counts& o) {
    for (const auto& [file, m] : o.lines)
      for (const auto& [line, hits] : m) lines[file][line] += hits;
    for (const auto& [file, m] : o.branches)
      for (const auto& [key, taken] : m) branches[file][key] += taken;
  }
};

struct tracked_buffer {
  std::uint64_t program = 0;
  std::shared_ptr<backend::device> device;
  void* buffer = nullptr;
  std::shared_ptr<const std::vector<coverage_probe>> probes;
};

struct registry {
  std::mutex mutex;
  std::vector<tracked_buffer> buffers;
  counts pending;  // read back, not yet written
};

// Never destroyed: the exit handler uses it after other statics may be gone.
QD_FUNC registry& the_registry() {
  static auto* r = new registry;
  return *r;
}

// One buffer's counts: a line (or branch) probed twice in a kernel counts once.
QD_FUNC counts read_buffer(const tracked_buffer& t) {
  std::vector<std::uint8_t> hits(t.probes->size() ? t.probes->size() : 1);
  t.device->copy_to_host(hits.data(), t.buffer, hits.size());
  counts c;
  for (std::size_t s = 0; s < t.probes->size(); ++s) {
    const coverage_probe& p = (*t.probes)[s];
    const std::uint64_t hit = hits[s] != 0;
    if (p.block < 0) {
      std::uint64_t& v = c.lines[p.file][p.line];
      v = std::max(v, hit);
    } else {
      std::uint64_t& v = c.branches[p.file][{p.line, p.block, p.branch}];
      v = std::max(v, hit);
    }
  }
  return c;
}

// Reads back the buffers of `program` (every program when 0) into r.pending; releases
// them, or zeroes them so that counting restarts. Caller holds r.mutex.
QD_FUNC void collect(registry& r, std::uint64_t program, bool release) {
  for (auto it = r.buffers.begin(); it != r.buffers.end();) {
    if (program != 0 && it->program != program) {
      ++it;
      continue;
    }
    r.pending.add(read_buffer(*it));
    if (release) {
      it->device->release(it->buffer);
      it = r.buffers.erase(it);
    } else {
      std::vector<std::uint8_t> zero(it->probes->size() ? it->probes->size() : 1, 0);
      it->device->copy_from_host(it->buffer, zero.data(), zero.size());
      ++it;
    }
  }
}

QD_FUNC counts parse_tracefile(const std::string& path) {
  counts c;
  std::ifstream in(path);
  std::string line, file;
  while (std::getline(in, line)) {
    if (line.starts_with("SF:")) {
      file = line.substr(3);
    } else if (line.starts_with("DA:") && !file.empty()) {
      unsigned long l = 0;
      unsigned long long h = 0;
      if (std::sscanf(line.c_str() + 3, "%lu,%llu", &l, &h) >= 1) c.lines[file][static_cast<std::uint32_t>(l)] += h;
    } else if (line.starts_with("BRDA:") && !file.empty()) {
      unsigned long l = 0;
      long block = 0, branch = 0;
      unsigned long long taken = 0;
      if (std::sscanf(line.c_str() + 5, "%lu,%ld,%ld,%llu", &l, &block, &branch, &taken) >= 3)
        c.branches[file][{static_cast<std::uint32_t>(l), static_cast<std::int32_t>(block),
                          static_cast<std::int32_t>(branch)}] += taken;
    } else if (line == "end_of_record") {
      file.clear();
    }
  }
  return c;
}

QD_FUNC std::string tracefile_text(const counts& c) {
  std::map<std::string, int> files;
  for (const auto& [f, m] : c.lines) files[f] = 1;
  for (const auto& [f, m] : c.branches) files[f] = 1;
  std::string out;
  for (const auto& [file, unused] : files) {
    (void)unused;
    out += "TN:\nSF:" + file + "\n";
    if (auto b = c.branches.find(file); b != c.branches.end()) {
      std::size_t hit = 0;
      for (const auto& [key, taken] : b->second) {
        out += fmt::format("BRDA:{},{},{},{}\n", std::get<0>(key), std::get<1>(key), std::get<2>(key), taken);
        hit += taken != 0;
      }
      out += fmt::format("BRF:{}\nBRH:{}\n", b->second.size(), hit);
    }
    if (auto l = c.lines.find(file); l != c.lines.end()) {
      std::size_t hit = 0;
      for (const auto& [line, hits] : l->second) {
        out += fmt::format("DA:{},{}\n", line, hits);
        hit += hits != 0;
      }
      out += fmt::format("LF:{}\nLH:{}\n", l->second.size(), hit);
    }
    out += "end_of_record\n";
  }
  return out;
}

// Adds r.pending to the tracefile at `path` and clears it; false (pending kept) when the
// file cannot be written. Caller holds r.mutex.
QD_FUNC bool flush(registry& r, const std::string& path, std::string* why) {
  if (r.pending.empty()) return true;
  counts merged = parse_tracefile(path);
  merged.add(r.pending);
  if (!write_text_atomically(path, tracefile_text(merged), why)) return false;
  r.pending = {};
  return true;
}

QD_FUNC void flush_with_warning(registry& r) {
  std::string why;
  const std::string path = default_coverage_file();
  if (!flush(r, path, &why))
    log_fmt(log_level::warn, "kernel_coverage: cannot write the coverage tracefile {}: {}; its counts are kept in memory "
            "until a later write succeeds (qd::write_coverage(path) writes elsewhere)", path, why);
}

QD_FUNC void at_exit() {
  try {
    registry& r = the_registry();
    std::lock_guard lock(r.mutex);
    collect(r, 0, false);
    flush_with_warning(r);
  } catch (...) {  // nothing may escape an exit handler
  }
}

}  // namespace coverage_parts

QD_FUNC std::string default_coverage_file() {
  const char* env = std::getenv("QD_KERNEL_COVERAGE_FILE");
  return env && *env ? std::string(env) : std::string("qd_kernel_coverage.info");
}

QD_FUNC void* coverage_buffer(program& p, std::shared_ptr<const std::vector<coverage_probe>> probes) {
  using namespace coverage_parts;
  static std::once_flag exit_handler;
  std::call_once(exit_handler, [] { std::atexit(at_exit); });
  const std::size_t bytes = probes->empty() ? 1 : probes->size();
  void* buffer = p.device().allocate(bytes);
  std::vector<std::uint8_t> zero(bytes, 0);
  p.device().copy_from_host(buffer, zero.data(), bytes);
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  r.buffers.push_back({p.id(), p.device_ptr(), buffer, std::move(probes)});
  return buffer;
}

QD_FUNC void end_program_coverage(program& p) {
  using namespace coverage_parts;
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  collect(r, p.id(), true);
  flush_with_warning(r);
}

}  // namespace qd::detail

namespace qd {

QD_FUNC void write_coverage(const std::string& path) {
  using namespace detail::coverage_parts;
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  {
    detail::program_use use(std::nothrow);  // the running program's kernels count too
    if (use) collect(r, use->id(), false);
  }
  std::string why;
  if (!flush(r, path, &why))
    throw user_error(fmt::format("qd::write_coverage: cannot write the coverage tracefile {}: {}; the counts are kept "
                                 "for the next write",
                                 path, why));
}

}  // namespace qd
