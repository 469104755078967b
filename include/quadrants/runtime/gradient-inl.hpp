// Implementation of runtime/gradient.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <compare>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "quadrants/autodiff/activity.hpp"
#include "quadrants/autodiff/adjoint.hpp"
#include "quadrants/autodiff/footprint.hpp"
#include "quadrants/autodiff/tangent.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/gradient.hpp"
// dispatch.hpp before kernel_state.hpp: when everything is inline, dispatch.hpp ends by
// including kernel_state-inl.hpp and launch-inl.hpp, which need its declarations first.
#include "quadrants/runtime/pipeline/dispatch.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0::detail {

// The parameter pairs of `forward`'s adjoint that must not share an array. The adjoint reads
// the forward values from memory after the forward launch and accumulates each gradient
// into its parameter's buffer; with one array for two parameters, a write through one
// changes what the other read, and two gradients' updates meet in one buffer, where the
// plain (demoted) updates of owned elements may race. Read-only parameters without
// gradients may share freely.
QD_FUNC std::vector<alias_pair> adjoint_alias_pairs(const ir::function& forward) {
  const std::size_t n = forward.params.size();
  std::vector<char> read(n, 0), written(n, 0);
  for (const ir::node& node : forward.nodes) {
    if (node.param < 0 || static_cast<std::size_t>(node.param) >= n || (node.flags & ir::access::grad) != 0) continue;
    const ir::effect e = ir::properties(node.code).effect;
    if (e == ir::effect::global_read) read[static_cast<std::size_t>(node.param)] = 1;
    if (e == ir::effect::global_write || e == ir::effect::global_update)
      written[static_cast<std::size_t>(node.param)] = 1;
  }
  std::vector<alias_pair> pairs;
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b) {
      const ir::param_desc &da = forward.params[a], &db = forward.params[b];
      if (!da.is_array || !db.is_array || !(read[a] || written[a]) || !(read[b] || written[b])) continue;
      if (written[a] || written[b] || (da.needs_grad && db.needs_grad))
        pairs.push_back({static_cast<std::int32_t>(a), static_cast<std::int32_t>(b), written[a] != 0, written[b] != 0});
    }
  return pairs;
}

QD_FUNC kernel_state& adjoint_of(kernel_state& forward) {
  std::call_once(forward.adjoint_once, [&forward] {
    // The forward state owns its adjoint, so the adjoint may point back without owning it.
    kernel_state* fwd = &forward;
    forward.adjoint = make_kernel_state(forward.name + ".grad", forward.param_names, forward.params, [fwd](tracer& t) {
      {
        std::lock_guard lock(fwd->mutex);
        ensure_traced(*fwd);
      }
      t.fn = autodiff::make_adjoint(fwd->ir, {fwd->name, fwd->param_names});
      fwd->adjoint->alias_pairs = adjoint_alias_pairs(fwd->ir);  // traced under the adjoint's mutex
    });
  });
  return *forward.adjoint;
}

QD_FUNC kernel_state& tangent_of(kernel_state& forward) {
  std::call_once(forward.tangent_once, [&forward] {
    kernel_state* fwd = &forward;  // the forward state owns its tangent
    forward.tangent = make_kernel_state(forward.name + ".fwd", forward.param_names, forward.params, [fwd](tracer& t) {
      {
        std::lock_guard lock(fwd->mutex);
        ensure_traced(*fwd);
      }
      t.fn = autodiff::make_tangent(fwd->ir, {fwd->name, fwd->param_names});
      t.assertions = fwd->assertions;  // the tangent keeps the forward's qd::assert_ checks
    });
    forward.tangent->not_recorded = true;
    forward.tangent->graph = forward.graph;
  });
  return *forward.tangent;
}

QD_FUNC void launch_tangent(kernel_state& forward, launch_arg* args, std::size_t count) {
  kernel_state& k = tangent_of(forward);
  for (std::size_t i = 0; i < count && i < k.params.size(); ++i) {
    const ir::param_desc& d = k.params[i];
    if (d.is_array && d.needs_grad && args[i].dual == nullptr)
      throw user_error(
          fmt::format("kernel '{}': kernel.fwd needs the tangent buffer of {}; pass a qd::ndarray "
                      "constructed with qd::needs_grad (its .dual() holds the tangent; for an array inside a "
                      "struct argument, call its .dual() once before kernel.fwd)",
                      forward.name, param_label(forward, i)));
    args[i].grad = args[i].dual;
  }
  launch(k, args, count);
}

// Whether a's and b's buffers (their gradients' with `grad`) provably overlap: the same
// start, or ranges that intersect where both extents are known.
QD_FUNC bool provably_overlap(const launch_arg& a, const launch_arg& b, bool grad) {
  const void* p = grad ? a.grad : a.data;
  const void* q = grad ? b.grad : b.data;
  if (p == nullptr || q == nullptr) return false;
  if ((a.extent_known && a.bytes == 0) || (b.extent_known && b.bytes == 0)) return false;  // no elements
  if (p == q) return true;
  if (!a.extent_known || !b.extent_known) return false;
  const auto p0 = reinterpret_cast<std::uintptr_t>(p), q0 = reinterpret_cast<std::uintptr_t>(q);
  return p0 < q0 + b.bytes && q0 < p0 + a.bytes;
}

[[noreturn]] QD_FUNC void throw_aliased(const kernel_state& k, const alias_pair& pair) {
  const std::string a = param_name(k, static_cast<std::size_t>(pair.a)),
                    b = param_name(k, static_cast<std::size_t>(pair.b));
  std::string why;
  if (pair.a_written || pair.b_written) {
    const std::string& w = pair.b_written ? b : a;
    const std::string& other = pair.b_written ? a : b;
    why = fmt::format(
        "the forward kernel writes '{}', so '{}' no longer holds the values the forward launch read, "
        "and the adjoint, which reads them from memory, would differentiate the wrong ones",
        w, other);
  } else {
    why =
        "both carry gradients, and the adjoint's updates of one gradient buffer through two parameters may race "
        "and lose some";
  }
  throw user_error(
      fmt::format("kernel '{}': parameters '{}' and '{}' are given the same array (or overlapping "
                  "ones): {}. Pass distinct arrays (copy the array first) and add the two gradients "
                  "if you need their sum",
                  k.name, a, b, why));
}

QD_FUNC void check_adjoint_aliasing(const kernel_state& k, const launch_arg* args) {
  for (const alias_pair& pair : k.alias_pairs) {
    const launch_arg &a = args[static_cast<std::size_t>(pair.a)], &b = args[static_cast<std::size_t>(pair.b)];
    if (provably_overlap(a, b, false) || provably_overlap(a, b, true)) throw_aliased(k, pair);
  }
}

// A read box of a recorded launch: its launch, and its place among the boxes of the
// recorded launches' footprints (tape_state::boxes: launch, then footprint order). The
// overwrite check names, for each conflicting write, the first read in this order.
struct tape_read {
  std::size_t launch = 0, box = 0;
  auto operator<=>(const tape_read&) const = default;
};

using tape_boxes = std::vector<autodiff::access_box>;

// Reads of one view of a buffer, fixed once built: sorted by their first index in one
// dimension (chosen where the reads are narrowest: the time step's row), with a tree
// holding the largest last index and the earliest read under each node, so a query visits
// only the reads that overlap the write in that dimension and are earlier than any found.
class tape_read_block {
 public:
  // `reads` of an array of `ndim` dimensions, whose boxes are in `boxes`.
  tape_read_block(const std::vector<tape_read>& reads, const tape_boxes& boxes, int ndim) {
    for (const tape_read& r : reads)
      for (std::size_t d = 0; d < std::min(static_cast<std::size_t>(ndim), widths_.size()); ++d)
        widths_[d] += static_cast<double>(boxes[r.box].hi[d] - boxes[r.box].lo[d]);
    dim_ = narrowest(ndim);
    entries_.reserve(reads.size());
    for (const tape_read& r : reads) entries_.push_back({boxes[r.box].lo[dim()], r});
    std::sort(entries_.begin(), entries_.end(), by_lo);
    build(boxes);
  }

  // The reads of two blocks in one; where both are sorted in the dimension chosen for the
  // whole, their entries are merged in one pass.
  tape_read_block(const tape_read_block& a, const tape_read_block& b, const tape_boxes& boxes, int ndim) {
    for (std::size_t d = 0; d < widths_.size(); ++d) widths_[d] = a.widths_[d] + b.widths_[d];
    dim_ = narrowest(ndim);
    entries_.resize(a.size() + b.size());
    if (a.dim_ == dim_ && b.dim_ == dim_) {
      std::merge(a.entries_.begin(), a.entries_.end(), b.entries_.begin(), b.entries_.end(), entries_.begin(), by_lo);
    } else {
      auto out = entries_.begin();
      for (const tape_read_block* from : {&a, &b})
        for (const entry& e : from->entries_) *out++ = {boxes[e.read.box].lo[dim()], e.read};
      std::sort(entries_.begin(), entries_.end(), by_lo);
    }
    build(boxes);
  }

  std::size_t size() const { return entries_.size(); }

  // Lowers `best` to the first read that shares an element with `write` (of an array of
  // `ndim` dimensions).
  void first_conflict(const autodiff::access_box& write, int ndim, const tape_boxes& boxes,
                      std::optional<tape_read>& best) const {
    std::int64_t lo = std::numeric_limits<std::int64_t>::min();
    std::size_t end = entries_.size();
    if (dim_ < ndim) {  // only reads starting at or before the write's last index, ending at or after its first
      lo = write.lo[dim()];
      end = static_cast<std::size_t>(std::upper_bound(entries_.begin(), entries_.end(), write.hi[dim()],
                                                      [](std::int64_t v, const entry& e) { return v < e.lo; }) -
                                     entries_.begin());
    }
    visit(1, 0, leaves_, end, lo, write, ndim, boxes, best);
  }

 private:
  struct entry {
    std::int64_t lo = 0;  // the first index of its box in the block's dimension
    tape_read read;
  };
  struct node {
    std::int64_t max_hi = 0;
    tape_read first;
  };
  std::array<double, 4> widths_{};  // per dimension, the reads' widths in sum
  int dim_ = 0;
  std::vector<entry> entries_;
  std::size_t leaves_ = 0;
  std::vector<node> tree_;

  static bool by_lo(const entry& a, const entry& b) { return a.lo < b.lo; }
  std::size_t dim() const { return static_cast<std::size_t>(dim_); }

  // The dimension whose read intervals are narrowest in sum: the one a query can skip by.
  int narrowest(int ndim) const {
    int best = 0;
    for (int d = 1; d < std::min(ndim, static_cast<int>(widths_.size())); ++d)
      if (widths_[static_cast<std::size_t>(d)] < widths_[static_cast<std::size_t>(best)]) best = d;
    return best;
  }

  // The tree over the entries, a complete binary one: node i's children are 2i and 2i + 1,
  // the leaves from `leaves` (a power of two) on; leaves past the entries hold nothing.
  void build(const tape_boxes& boxes) {
    leaves_ = std::bit_ceil(entries_.size());
    tree_.assign(2 * leaves_, {std::numeric_limits<std::int64_t>::min(), {~std::size_t{0}, ~std::size_t{0}}});
    for (std::size_t i = 0; i < entries_.size(); ++i)
      tree_[leaves_ + i] = {boxes[entries_[i].read.box].hi[dim()], entries_[i].read};
    for (std::size_t i = leaves_; i-- > 1;)
      tree_[i] = {std::max(tree_[2 * i].max_hi, tree_[2 * i + 1].max_hi),
                  std::min(tree_[2 * i].first, tree_[2 * i + 1].first)};
  }

  void visit(std::size_t at, std::size_t l, std::size_t r, std::size_t end, std::int64_t lo,
             const autodiff::access_box& write, int ndim, const tape_boxes& boxes,
             std::optional<tape_read>& best) const {
    const node& n = tree_[at];
    if (l >= end || n.max_hi < lo || (best && !(n.first < *best))) return;
    if (r - l == 1) {
      if (autodiff::intersect(boxes[entries_[l].read.box], write, ndim)) best = entries_[l].read;
      return;
    }
    const std::size_t m = l + (r - l) / 2;
    visit(2 * at, l, m, end, lo, write, ndim, boxes, best);
    visit(2 * at + 1, m, r, end, lo, write, ndim, boxes, best);
  }
};

// The reads of one view of a buffer, added as launches are recorded (in launch order): the
// newest (up to 128) in a list, looked through only where the box holding them all meets
// the write, the others in blocks of 128, 256, 512, ... reads, oldest first, where two
// blocks of one size become one (as a binary counter carries). So each read is moved
// about log n times in all, a query looks into about log n blocks, and no launch re-sorts
// the whole index: n log² n for n reads at worst.
class tape_read_index {
 public:
  void add(const tape_read& read, const tape_boxes& boxes, int ndim) {
    if (!first_) first_ = read;
    const autodiff::access_box& box = boxes[read.box];
    for (std::size_t d = 0; d < recent_span_.lo.size(); ++d) {
      recent_span_.lo[d] = recent_.empty() ? box.lo[d] : std::min(recent_span_.lo[d], box.lo[d]);
      recent_span_.hi[d] = recent_.empty() ? box.hi[d] : std::max(recent_span_.hi[d], box.hi[d]);
    }
    recent_.push_back(read);
    if (recent_.size() < recent_limit) return;
    blocks_.emplace_back(recent_, boxes, ndim);
    recent_.clear();
    while (blocks_.size() >= 2 && blocks_[blocks_.size() - 2].size() == blocks_.back().size()) {
      tape_read_block joined(blocks_[blocks_.size() - 2], blocks_.back(), boxes, ndim);
      blocks_.pop_back();
      blocks_.back() = std::move(joined);
    }
  }

  // Lowers `best` to the first read that shares an element with `write` (of an array of
  // `ndim` dimensions). The blocks, then the list, hold ever later reads.
  void first_conflict(const autodiff::access_box& write, int ndim, const tape_boxes& boxes,
                      std::optional<tape_read>& best) const {
    for (const tape_read_block& b : blocks_) b.first_conflict(write, ndim, boxes, best);
    if (recent_.empty() || !autodiff::intersect(recent_span_, write, ndim)) return;
    for (const tape_read& r : recent_) {
      if (best && !(r < *best)) return;
      if (autodiff::intersect(boxes[r.box], write, ndim)) {
        best = r;
        return;
      }
    }
  }

  // The earliest read, if any.
  const std::optional<tape_read>& first() const { return first_; }

 private:
  static constexpr std::size_t recent_limit = 128;
  std::vector<tape_read_block> blocks_;
  std::vector<tape_read> recent_;
  autodiff::access_box recent_span_;  // the smallest box holding the list's reads
  std::optional<tape_read> first_;
};

// One view of a buffer as recorded launches were given it: reads of views that differ
// conflict with writes as a whole (any shared byte), of the same view element by element.
struct tape_view {
  std::uintptr_t data = 0;
  std::uint64_t bytes = 0;
  std::array<std::int64_t, 4> shape{};
  bool extent_known = true;
  auto operator<=>(const tape_view&) const = default;
  bool same_elements(const tape_view& o) const { return data == o.data && bytes == o.bytes && shape == o.shape; }
  bool spans() const { return extent_known && bytes > 0; }  // has an extent to overlap by
  std::uintptr_t end() const { return data + bytes; }
  // The first view, in this order, that starts at `data`.
  static tape_view first_at(std::uintptr_t data) {
    constexpr std::int64_t least = std::numeric_limits<std::int64_t>::min();
    return {data, 0, {least, least, least, least}, false};
  }
};

QD_FUNC tape_view view_of(const launch_arg& a) {
  return {reinterpret_cast<std::uintptr_t>(a.data),
          a.bytes,
          {a.shape[0], a.shape[1], a.shape[2], a.shape[3]},
          a.extent_known};
}

// The reads of the launches recorded so far, grouped by view and indexed, and the views
// whose reads a write through a view conflicts with.
class tape_reads {
 public:
  // Adds `read`, of a parameter of `ndim` dimensions given `arg`.
  void add(const launch_arg& arg, int ndim, const tape_read& read, const tape_boxes& boxes) {
    const tape_view v = view_of(arg);
    auto [it, fresh] = views_.try_emplace(v);
    view_reads& r = it->second;
    if (fresh) {
      r.view = v;
      r.ndim = ndim;
      ++version_;
      if (v.spans()) add_to_cluster(r);
    }
    r.all.add(read, boxes, r.ndim);
    if (boxes[read.box].needed) r.needed.add(read, boxes, r.ndim);
  }

  // The first read, in launch then footprint order, that `write` (a box of an
  // `ndim`-dimensional parameter given `arg`) conflicts with: any read for an overwrite, a
  // read whose value the adjoint needs for an accumulation.
  std::optional<tape_read> first_conflict(const launch_arg& arg, const autodiff::access_box& write, int ndim,
                                          const tape_boxes& boxes) {
    const tape_view w = view_of(arg);
    if (last_version_ != version_ || !(w == last_view_)) {  // a launch's writes mostly go to one view
      partners_ = conflicting_views(w);
      last_view_ = w;
      last_version_ = version_;
    }
    const bool overwrite = write.kind == autodiff::access_kind::overwrite;
    std::optional<tape_read> best;
    for (const view_reads* v : partners_) {
      const tape_read_index& reads = overwrite ? v->all : v->needed;
      if (v->view.same_elements(w)) {
        reads.first_conflict(write, ndim, boxes, best);
      } else if (const std::optional<tape_read>& r = reads.first(); r && (!best || *r < *best)) {
        best = r;
      }
    }
    return best;
  }

 private:
  struct view_reads {
    tape_view view;
    int ndim = 0;
    tape_read_index all, needed;
  };
  // Spanning views whose byte ranges chain into one range [start, end): a write's bytes can
  // only meet views of the clusters its range meets.
  struct cluster {
    std::uintptr_t end = 0;
    std::vector<const view_reads*> views;
  };
  std::map<tape_view, view_reads> views_;       // by start first; nodes stay put
  std::map<std::uintptr_t, cluster> clusters_;  // by start; disjoint
  std::size_t version_ = 0;                     // views added so far
  std::size_t last_version_ = ~std::size_t{0};
  tape_view last_view_;
  std::vector<const view_reads*> partners_;  // last_view_'s, at last_version_

  void add_to_cluster(const view_reads& r) {
    std::uintptr_t start = r.view.data, end = r.view.end();
    cluster joined{end, {&r}};
    auto it = clusters_.upper_bound(start);
    if (it != clusters_.begin() && std::prev(it)->second.end > start) --it;
    while (it != clusters_.end() && it->first < end) {  // the clusters [start, end) meets become one
      start = std::min(start, it->first);
      joined.end = std::max(joined.end, it->second.end);
      std::vector<const view_reads*>& v = it->second.views;
      if (v.size() > joined.views.size()) std::swap(v, joined.views);
      joined.views.insert(joined.views.end(), v.begin(), v.end());
      it = clusters_.erase(it);
    }
    clusters_.emplace(start, std::move(joined));
  }

  // The read views whose reads a write through `w` may conflict with: the same view (box by
  // box), another view of the same start where either extent is unknown, or any view
  // sharing a byte with it where both are known.
  std::vector<const view_reads*> conflicting_views(const tape_view& w) const {
    std::vector<const view_reads*> out;
    for (auto it = views_.lower_bound(tape_view::first_at(w.data)); it != views_.end() && it->first.data == w.data;
         ++it) {
      const tape_view& r = it->first;
      if (r.same_elements(w) || !r.extent_known || !w.extent_known || (r.spans() && w.spans()))
        out.push_back(&it->second);
    }
    if (!w.spans()) return out;
    auto it = clusters_.upper_bound(w.data);
    if (it != clusters_.begin() && std::prev(it)->second.end > w.data) --it;
    for (; it != clusters_.end() && it->first < w.end(); ++it)
      for (const view_reads* r : it->second.views)
        if (r->view.data != w.data && r->view.data < w.end() && w.data < r->view.end()) out.push_back(r);
    return out;
  }
};

struct tape_launch {
  std::shared_ptr<kernel_state> kernel;
  std::vector<launch_arg> args;
};

struct tape_state {
  tape_loss loss;
  std::vector<tape_launch> launches;
  bool done = false;
  bool clear_gradients = false;
  std::atomic<bool> ended{false};  // its qd::ad::tape is gone (destroyed on any thread)
  std::thread::id owner;           // the thread whose launches it records
  // The overwrite check, run as each launch is recorded (check_recorded_launch):
  std::unordered_map<const kernel_state*, std::vector<autodiff::footprint_access>> accesses;  // per kernel
  tape_boxes boxes;                // the footprints of the launches checked so far, one after the other
  tape_reads reads;                // their reads
  std::exception_ptr conflict;     // the first conflict found: backward() raises it
  autodiff::launch_values values;  // scratch: the launch's values
};

// The tapes recording on this thread, oldest first: they live here until their thread
// notices they ended, so active_tape never points at a freed tape.
struct thread_tapes {
  std::vector<std::shared_ptr<tape_state>> stack;
};

QD_FUNC thread_tapes& this_thread_tapes() {
  thread_local thread_tapes tapes;
  return tapes;
}

// Drops the ended tapes of this thread; active_tape becomes the newest live one.
QD_FUNC void settle_tapes() {
  std::vector<std::shared_ptr<tape_state>>& stack = this_thread_tapes().stack;
  std::erase_if(stack, [](const std::shared_ptr<tape_state>& t) { return t->ended.load(std::memory_order_acquire); });
  active_tape = stack.empty() ? nullptr : stack.back().get();
}

// The overwrite check of the newest recorded launch: no recorded launch's adjoint may read
// data a later launch changed (overwrote, or accumulated into where the earlier adjoint
// needs the value it read). The launch's footprint (autodiff/footprint.hpp) is computed
// from its arguments; each of its writes is looked up among the reads of the launches
// before it, then its reads join them. The first conflict (in launch order) is kept, and
// raised by backward(); the launches after it are recorded but not checked.
QD_FUNC void check_recorded_launch(tape_state& t) {
  if (t.conflict) return;
  try {
    const std::size_t later = t.launches.size() - 1;
    const tape_launch& l = t.launches.back();
    const kernel_state& lk = *l.kernel;
    auto [known, fresh] = t.accesses.try_emplace(&lk);
    if (fresh) {  // the kernel's accesses, found once per tape, and which reads its adjoint needs
      const ir::function& fn = lk.ir;
      // A custom backward (qd::ad::custom_grad) may read anything the forward read: every read counts as needed.
      known->second = autodiff::footprint_accesses(fn, lk.custom_adjoint
                                                           ? std::vector<bool>(fn.nodes.size(), true)
                                                           : autodiff::needed_values(fn, autodiff::active_values(fn)));
    }
    t.values.scalars.clear();
    t.values.shapes.clear();
    for (const launch_arg& a : l.args) {
      t.values.scalars.push_back(a.scalar_bits);
      t.values.shapes.push_back({a.shape[0], a.shape[1], a.shape[2], a.shape[3]});
    }
    const std::size_t first = t.boxes.size();
    autodiff::footprint(lk.ir, known->second, t.values, t.boxes);
    for (std::size_t b = first; b < t.boxes.size(); ++b) {
      const autodiff::access_box& write = t.boxes[b];
      if (write.kind == autodiff::access_kind::read) continue;
      const auto wp = static_cast<std::size_t>(write.param);
      const std::optional<tape_read> read = t.reads.first_conflict(l.args[wp], write, lk.params[wp].ndim, t.boxes);
      if (!read) continue;
      const bool overwrite = write.kind == autodiff::access_kind::overwrite;
      const std::size_t earlier = read->launch;
      const auto& ek = *t.launches[earlier].kernel;
      t.conflict = std::make_exception_ptr(user_error(fmt::format(
          "qd::ad::tape: launch {} (kernel '{}') {} elements of {} that launch {} (kernel '{}') read as "
          "{}; the adjoint of launch {} needs the values it read, and would see the new ones. Write each "
          "launch's results into elements (or an array) no earlier launch reads, for example one row per "
          "time step{}",
          later + 1, lk.name, overwrite ? "overwrites" : "accumulates into", param_label(lk, wp), earlier + 1, ek.name,
          param_label(ek, static_cast<std::size_t>(t.boxes[read->box].param)), earlier + 1,
          overwrite ? "" : " (an in-place update x[i] += ... after a launch that read x nonlinearly)")));
      return;
    }
    for (std::size_t b = first; b < t.boxes.size(); ++b) {
      const autodiff::access_box& box = t.boxes[b];
      if (box.kind != autodiff::access_kind::read) continue;
      const auto p = static_cast<std::size_t>(box.param);
      t.reads.add(l.args[p], lk.params[p].ndim, {later, b}, t.boxes);
    }
  } catch (...) {  // raised at backward(), like a conflict
    t.conflict = std::current_exception();
  }
}

QD_FUNC void record_on_tape(kernel_state& k, const launch_arg* args, std::size_t count) {
  if (active_tape->ended.load(std::memory_order_acquire)) {  // destroyed, perhaps on another thread
    settle_tapes();
    if (active_tape == nullptr) return;
  }
  if (k.ir.is_gradient || k.not_recorded) return;  // adjoints and tangents are not part of the forward pass
  active_tape->launches.push_back({k.shared_from_this(), std::vector<launch_arg>(args, args + count)});
  check_recorded_launch(*active_tape);
}

QD_FUNC std::shared_ptr<tape_state> begin_tape(tape_loss loss, bool clear_gradients) {
  if (loss.ndim != 0)
    throw user_error(
        fmt::format("qd::ad::tape: the loss must be a 0-d array (qd::ndarray<T, 0>), not a {}-d one; "
                    "reduce it into one element first",
                    loss.ndim));
  if (!loss.is_float) throw user_error("qd::ad::tape: the loss must be a floating-point array (float or double)");
  if (!loss.has_grad)
    throw user_error("qd::ad::tape: the loss has no gradient buffer; construct it with qd::needs_grad");
  loss.set_grad(0.0);
  auto t = std::make_shared<tape_state>();
  t->loss = std::move(loss);
  t->clear_gradients = clear_gradients;
  t->owner = std::this_thread::get_id();
  this_thread_tapes().stack.push_back(t);
  settle_tapes();
  return t;
}

QD_FUNC void end_tape(const std::shared_ptr<tape_state>& t) noexcept {
  t->ended.store(true, std::memory_order_release);
  // On its own thread it leaves the stack now; elsewhere, at its thread's next tape
  // operation or recorded launch (that thread may be launching right now).
  if (t->owner == std::this_thread::get_id()) settle_tapes();
}

// tape_options::clear_gradients: zeroes each recorded array's gradient buffer once.
QD_FUNC void clear_recorded_gradients(const tape_state& t) {
  program_use p("qd::ad::tape::backward()");
  std::vector<const void*> done;
  std::vector<unsigned char> zeros;
  for (const tape_launch& l : t.launches)
    for (std::size_t k = 0; k < l.args.size(); ++k) {
      const launch_arg& a = l.args[k];
      const ir::param_desc& d = l.kernel->params[k];
      if (a.grad == nullptr || !d.is_array || std::find(done.begin(), done.end(), a.grad) != done.end()) continue;
      done.push_back(a.grad);
      // A qd::ndarray's gradient has its data's extent; an external array's follows its shape.
      std::size_t bytes = static_cast<std::size_t>(size_of(d.type));
      for (int dim = 0; dim < d.ndim; ++dim) bytes *= static_cast<std::size_t>(a.shape[dim]);
      if (a.extent_known) bytes = static_cast<std::size_t>(a.bytes);
      zeros.assign(bytes, 0);
      p->device().copy_from_host(a.grad, zeros.data(), bytes);
    }
}

QD_FUNC void run_backward(tape_state& t) {
  if (t.done) throw user_error("qd::ad::tape::backward(): already ran on this tape; record a new tape");
  if (t.conflict) std::rethrow_exception(t.conflict);  // found as the launches were recorded
  t.done = true;
  if (t.clear_gradients) clear_recorded_gradients(t);
  t.loss.set_grad(1.0);
  tape_state* recording = active_tape;
  active_tape = nullptr;  // the adjoints are not recorded
  try {
    for (std::size_t k = t.launches.size(); k-- > 0;) {
      const tape_launch& l = t.launches[k];
      // A kernel without a needs_grad parameter passes no gradient on (it is recorded
      // for the overwrite check only).
      if (std::none_of(l.kernel->params.begin(), l.kernel->params.end(),
                       [](const ir::param_desc& d) { return d.needs_grad; }))
        continue;
      launch(adjoint_of(*l.kernel), l.args.data(), l.args.size());
    }
  } catch (...) {
    active_tape = recording;
    throw;
  }
  active_tape = recording;
}

}  // namespace qd::inline v0::detail
