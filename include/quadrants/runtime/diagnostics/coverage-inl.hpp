// Implementation of runtime/diagnostics/coverage.hpp.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>
#include <tuple>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/log.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/walk.hpp"
#include "quadrants/runtime/diagnostics/coverage.hpp"
#include "quadrants/runtime/pipeline/program.hpp"
#include "quadrants/runtime/diagnostics/text_file.hpp"

namespace qd::inline v0::detail {

QD_FUNC ir::function instrument_for_coverage(const ir::function& src, std::vector<coverage_probe>& probes) {
  ir::function fn = src;
  const auto cov = static_cast<std::int32_t>(fn.params.size());
  fn.params.push_back({true, dtype::u32, 1, false});  // u32: a probe's store cannot alias float data
  auto add = [&](ir::node n, std::int32_t block, ir::source_loc loc) {
    const auto i = static_cast<ir::id>(fn.nodes.size());
    fn.nodes.push_back(n);
    fn.node_block.push_back(block);
    fn.locs.push_back({i, loc});  // probes are appended: the runs stay sorted
    return i;
  };
  auto branch_on = [&](ir::id cond, std::int32_t block, ir::source_loc loc) {
    const ir::id n = add({.code = ir::op::if_, .type = dtype::boolean, .a = cond}, block, loc);
    for (std::int32_t* side : {&fn.at(n).block0, &fn.at(n).block1}) {
      fn.blocks.emplace_back();
      fn.block_owner.push_back(n);
      *side = static_cast<std::int32_t>(fn.blocks.size() - 1);
    }
    return n;
  };
  auto access = [&](ir::node n, ir::id index) {
    n.param = cov;
    n.list_begin = static_cast<std::int32_t>(fn.lists.size());
    n.list_size = 1;
    fn.lists.push_back(index);
    return n;
  };
  auto constant = [&](dtype t, std::int64_t v, std::int32_t block, ir::source_loc loc) {
    return add({.code = ir::op::constant, .type = t, .imm = v}, block, loc);
  };
  auto binary = [&](ir::binary_op o, ir::id x, ir::id y, std::int32_t block, ir::source_loc loc) {
    return add({.code = ir::op::binary, .type = dtype::boolean, .sub = static_cast<std::uint8_t>(o), .a = x, .b = y},
               block, loc);
  };
  // probes[slot] = 1, serially (`checked`: only while it is 0, for code a loop's threads
  // all run: after the first store they only read the value).
  auto probe = [&](std::int32_t block, coverage_probe what, std::vector<ir::id>& out, bool checked) {
    const auto slot = static_cast<std::int64_t>(probes.size());
    probes.push_back(what);
    const ir::source_loc loc{what.file, what.line};
    const ir::id index = constant(dtype::i32, slot, block, loc);
    out.push_back(index);
    std::int32_t store_block = block;
    if (checked) {
      const ir::id seen = add(access({.code = ir::op::global_load, .type = dtype::u32}, index), block, loc);
      const ir::id zero = constant(dtype::u32, 0, block, loc);
      const ir::id unseen = binary(ir::binary_op::eq, seen, zero, block, loc);
      const ir::id branch = branch_on(unseen, block, loc);
      out.insert(out.end(), {seen, zero, unseen, branch});
      store_block = fn.at(branch).block0;
    }
    const ir::id one = constant(dtype::u32, 1, store_block, loc);
    const ir::id store =
        add(access({.code = ir::op::global_store, .type = dtype::u32, .a = one}, index), store_block, loc);
    if (checked)
      fn.blocks[static_cast<std::size_t>(store_block)] = {one, store};
    else
      out.insert(out.end(), {one, store});
  };
  // Reachable blocks, and each if_'s ordinal among the if_s on its line (BRDA's block).
  std::vector<bool> reachable(src.blocks.size(), false);
  reachable[0] = true;
  std::vector<std::int32_t> ordinal(src.nodes.size(), -1);
  std::map<std::pair<std::string, std::uint32_t>, std::int32_t> ifs_on_line;
  ir::walk(src, 0, [&](ir::id i, int) {
    const ir::node& n = src.at(i);
    if (n.block0 >= 0) reachable[static_cast<std::size_t>(n.block0)] = true;
    if (n.block1 >= 0) reachable[static_cast<std::size_t>(n.block1)] = true;
    const ir::source_loc l = src.location(i);
    if (n.code == ir::op::if_ && l.known()) ordinal[static_cast<std::size_t>(i)] = ifs_on_line[{l.file, l.line}]++;
  });
  // The lines of a block's own statements, each where it starts.
  auto lines_of = [&](const std::vector<ir::id>& stmts, std::size_t from, ir::source_loc last) {
    std::vector<std::pair<std::size_t, ir::source_loc>> starts;
    for (std::size_t j = from; j < stmts.size(); ++j) {
      const ir::source_loc l = src.location(stmts[j]);
      if (l.known() && !(l == last)) starts.emplace_back(j, l);
      if (l.known()) last = l;
    }
    return starts;
  };
  for (std::size_t b = 0; b < src.blocks.size(); ++b) {
    if (!reachable[b]) continue;
    const ir::id owner = src.block_owner[b];
    const ir::node* o = owner == ir::none ? nullptr : &src.at(owner);
    if (o && o->code == ir::op::while_ && o->block0 == static_cast<std::int32_t>(b)) continue;  // a condition
    const auto block = static_cast<std::int32_t>(b);
    const std::vector<ir::id>& old = src.blocks[b];
    std::vector<ir::id> out;
    std::size_t j = 0;
    if (o && o->code == ir::op::range_for)  // its loop indices come first
      for (; j < old.size() && j < static_cast<std::size_t>(o->imm); ++j) out.push_back(old[j]);
    // A top-level loop's body was probed before the loop (below).
    const bool hoisted = o && o->code == ir::op::range_for && src.is_top_level(owner);
    if (o && o->code == ir::op::if_ && ordinal[static_cast<std::size_t>(owner)] >= 0) {
      const ir::source_loc l = src.location(owner);
      probe(block, {l.file, l.line, ordinal[static_cast<std::size_t>(owner)], o->block1 == block ? 1 : 0}, out, b != 0);
    }
    std::vector<std::pair<std::size_t, ir::source_loc>> starts;
    if (!hoisted) starts = lines_of(old, j, {});
    std::size_t next = 0;
    for (; j < old.size(); ++j) {
      const ir::id stmt = old[j];
      if (b == 0 && src.at(stmt).code == ir::op::range_for) {
        // The loop's line and its body's own lines ran when an iteration did: probed once,
        // serially, under "the loop runs", so no iteration pays for them.
        const ir::node loop = src.at(stmt);
        const ir::source_loc l = src.location(stmt);
        const auto& body = src.block(loop.block0);
        auto body_lines = lines_of(body, static_cast<std::size_t>(loop.imm), l);
        if (l.known()) body_lines.insert(body_lines.begin(), {0, l});
        if (!body_lines.empty()) {
          ir::id runs = ir::none;
          if (loop.imm == 1) {
            runs = binary(ir::binary_op::lt, loop.a, loop.b, 0, l);
          } else {
            const ir::id zero = constant(dtype::i32, 0, 0, l);
            out.push_back(zero);
            for (std::int32_t d = 0; d < loop.list_size; ++d) {
              const ir::id positive = binary(ir::binary_op::gt, src.list(loop, d), zero, 0, l);
              out.push_back(positive);
              if (runs != ir::none) {
                runs = binary(ir::binary_op::logical_and, runs, positive, 0, l);
                out.push_back(runs);
              } else {
                runs = positive;
              }
            }
            out.pop_back();  // `runs` itself is pushed below
          }
          out.push_back(runs);
          const ir::id branch = branch_on(runs, 0, l);
          std::vector<ir::id> probes_block;
          for (const auto& [at, line] : body_lines)
            probe(fn.at(branch).block0, {line.file, line.line}, probes_block, false);
          fn.blocks[static_cast<std::size_t>(fn.at(branch).block0)] = std::move(probes_block);
          out.push_back(branch);
        }
      } else if (next < starts.size() && starts[next].first == j) {
        probe(block, {starts[next].second.file, starts[next].second.line}, out, b != 0);
        ++next;
      }
      while (next < starts.size() && starts[next].first <= j) ++next;
      out.push_back(stmt);
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
  long pid = 0;    // the process these belong to: a fork()ed child starts empty (no count twice)
};

// Never destroyed: the exit handler uses it after other statics may be gone. The caller
// locks r.mutex; a child of fork() drops what its parent counted (the parent writes it).
QD_FUNC registry& the_registry() {
  static auto* r = new registry;
  return *r;
}
QD_FUNC void adopt(registry& r) {
  const long pid = static_cast<long>(::getpid());
  if (r.pid == pid) return;
  r.pid = pid;
  r.buffers.clear();
  r.pending = {};
}

// One buffer's counts: a line (or branch) probed twice in a kernel counts once.
QD_FUNC counts read_buffer(const tracked_buffer& t) {
  std::vector<std::uint32_t> hits(t.probes->size() ? t.probes->size() : 1);
  t.device->copy_to_host(hits.data(), t.buffer, hits.size() * sizeof(std::uint32_t));
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
      std::vector<std::uint32_t> zero(it->probes->size() ? it->probes->size() : 1, 0);
      it->device->copy_from_host(it->buffer, zero.data(), zero.size() * sizeof(std::uint32_t));
      ++it;
    }
  }
}

QD_FUNC counts parse_tracefile(const std::string& text) {
  counts c;
  std::istringstream in(text);
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
  // Only a regular file (or a new name) is read and replaced: a FIFO, device or link there
  // is refused, never opened, so nothing blocks at exit or reads without end.
  std::string existing;
  if (!read_regular_file(path, existing, why)) return false;
  counts merged = parse_tracefile(existing);
  merged.add(r.pending);
  if (!write_text_atomically(path, tracefile_text(merged), why)) return false;
  r.pending = {};
  return true;
}

QD_FUNC void flush_with_warning(registry& r) {
  std::string why;
  const std::string path = default_coverage_file();
  if (!flush(r, path, &why))
    log_fmt(log_level::warn,
            "kernel_coverage: cannot write the coverage tracefile {}: {}; its counts are kept in memory "
            "until a later write succeeds (qd::write_coverage(path) writes elsewhere)",
            path, why);
}

QD_FUNC void at_exit() {
  try {
    registry& r = the_registry();
    std::lock_guard lock(r.mutex);
    adopt(r);
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
  const std::size_t count = probes->empty() ? 1 : probes->size();
  void* buffer = p.device().allocate(count * sizeof(std::uint32_t));
  std::vector<std::uint32_t> zero(count, 0);
  p.device().copy_from_host(buffer, zero.data(), count * sizeof(std::uint32_t));
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  adopt(r);
  r.buffers.push_back({p.id(), p.device_ptr(), buffer, std::move(probes)});
  return buffer;
}

QD_FUNC void end_program_coverage(program& p) {
  using namespace coverage_parts;
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  adopt(r);
  collect(r, p.id(), true);
  flush_with_warning(r);
}

}  // namespace qd::inline v0::detail

namespace qd::inline v0 {

QD_FUNC void write_coverage(const std::string& path) {
  using namespace detail::coverage_parts;
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  adopt(r);
  {
    detail::program_use use(std::nothrow);  // the running program's kernels count too
    if (use) collect(r, use->id(), false);
  }
  std::string why;
  if (!flush(r, path, &why))
    throw user_error(
        fmt::format("qd::write_coverage: cannot write the coverage tracefile {}: {}; the counts are kept "
                    "for the next write",
                    path, why));
}

}  // namespace qd::inline v0
