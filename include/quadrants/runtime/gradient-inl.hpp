// Implementation of runtime/gradient.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <compare>
#include <cstdint>
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

QD_FUNC void record_on_tape(kernel_state& k, const launch_arg* args, std::size_t count) {
  if (active_tape->ended.load(std::memory_order_acquire)) {  // destroyed, perhaps on another thread
    settle_tapes();
    if (active_tape == nullptr) return;
  }
  if (k.ir.is_gradient || k.not_recorded) return;  // adjoints and tangents are not part of the forward pass
  active_tape->launches.push_back({k.shared_from_this(), std::vector<launch_arg>(args, args + count)});
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

// The recorded launches' footprints (autodiff/footprint.hpp), one list: launch l's boxes
// are boxes[first[l]] .. boxes[first[l + 1] - 1], in its footprint's order.
struct tape_footprints {
  std::vector<autodiff::access_box> boxes;
  std::vector<std::size_t> first;
};

QD_FUNC tape_footprints tape_footprints_of(const tape_state& t) {
  tape_footprints f;
  f.first.reserve(t.launches.size() + 1);
  // Per kernel, found once: its accesses (and which reads its adjoint needs).
  std::unordered_map<const kernel_state*, std::vector<autodiff::footprint_access>> accesses;
  autodiff::launch_values values;
  for (const tape_launch& l : t.launches) {
    auto [known, fresh] = accesses.try_emplace(l.kernel.get());
    if (fresh) {
      const ir::function& fn = l.kernel->ir;
      // A custom backward (qd::ad::custom_grad) may read anything the forward read: every read counts as needed.
      known->second = autodiff::footprint_accesses(fn, l.kernel->custom_adjoint
                                                           ? std::vector<bool>(fn.nodes.size(), true)
                                                           : autodiff::needed_values(fn, autodiff::active_values(fn)));
    }
    values.scalars.clear();
    values.shapes.clear();
    for (const launch_arg& a : l.args) {
      values.scalars.push_back(a.scalar_bits);
      values.shapes.push_back({a.shape[0], a.shape[1], a.shape[2], a.shape[3]});
    }
    f.first.push_back(f.boxes.size());
    autodiff::footprint(l.kernel->ir, known->second, values, f.boxes);
  }
  f.first.push_back(f.boxes.size());
  return f;
}

// A read box of a recorded launch: its launch and its place in tape_footprints::boxes.
// The overwrite check names, for each conflicting write, the first read in this order.
struct tape_read {
  std::size_t launch = 0, box = 0;
  auto operator<=>(const tape_read&) const = default;
};

// The reads of one view of a buffer, for the overwrite check: sorted by their first index
// in one dimension `dim` (chosen where the reads are narrowest: the time step's row), with
// a tree holding the largest last index and the earliest read under each node, so a query
// visits only the reads that overlap the write in that dimension and come earlier.
class tape_read_index {
 public:
  tape_read_index() = default;
  tape_read_index(std::vector<tape_read> reads, const std::vector<autodiff::access_box>& boxes, int dim) : dim_(dim) {
    if (reads.empty()) return;
    first_ = reads.front();  // the reads come in launch order
    auto box = [&](const tape_read& r) -> const autodiff::access_box& { return boxes[r.box]; };
    const auto d = static_cast<std::size_t>(dim);
    std::stable_sort(reads.begin(), reads.end(),
                     [&](const tape_read& a, const tape_read& b) { return box(a).lo[d] < box(b).lo[d]; });
    for (const tape_read& r : reads) entries_.push_back({r, &box(r)});
    tree_.resize(4 * entries_.size());
    build(1, 0, entries_.size());
  }

  // Lowers `best` to the first read before launch `before` that shares an element with
  // `write` (of an array of `ndim` dimensions).
  void first_conflict(const autodiff::access_box& write, int ndim, std::size_t before,
                      std::optional<tape_read>& best) const {
    if (entries_.empty() || first_.launch >= before) return;
    std::int64_t lo = std::numeric_limits<std::int64_t>::min();
    std::size_t end = entries_.size();
    if (dim_ < ndim) {  // only reads starting at or before the write's last index, ending at or after its first
      const auto d = static_cast<std::size_t>(dim_);
      lo = write.lo[d];
      end =
          static_cast<std::size_t>(std::upper_bound(entries_.begin(), entries_.end(), write.hi[d],
                                                    [&](std::int64_t v, const entry& e) { return v < e.box->lo[d]; }) -
                                   entries_.begin());
    }
    visit(1, 0, entries_.size(), end, lo, write, ndim, before, best);
  }

  // The earliest read, if it is before launch `before`.
  std::optional<tape_read> first_before(std::size_t before) const {
    if (entries_.empty() || first_.launch >= before) return std::nullopt;
    return first_;
  }

 private:
  struct entry {
    tape_read read;
    const autodiff::access_box* box;
  };
  struct node {
    std::int64_t max_hi = 0;
    tape_read first;
  };
  std::vector<entry> entries_;
  std::vector<node> tree_;
  tape_read first_;
  int dim_ = 0;

  void build(std::size_t at, std::size_t l, std::size_t r) {
    if (r - l == 1) {
      tree_[at] = {entries_[l].box->hi[static_cast<std::size_t>(dim_)], entries_[l].read};
      return;
    }
    const std::size_t m = l + (r - l) / 2;
    build(2 * at, l, m);
    build(2 * at + 1, m, r);
    tree_[at] = {std::max(tree_[2 * at].max_hi, tree_[2 * at + 1].max_hi),
                 std::min(tree_[2 * at].first, tree_[2 * at + 1].first)};
  }

  void visit(std::size_t at, std::size_t l, std::size_t r, std::size_t end, std::int64_t lo,
             const autodiff::access_box& write, int ndim, std::size_t before, std::optional<tape_read>& best) const {
    const node& n = tree_[at];
    if (l >= end || n.max_hi < lo || n.first.launch >= before || (best && !(n.first < *best))) return;
    if (r - l == 1) {
      if (autodiff::intersect(*entries_[l].box, write, ndim)) best = entries_[l].read;
      return;
    }
    const std::size_t m = l + (r - l) / 2;
    visit(2 * at, l, m, end, lo, write, ndim, before, best);
    visit(2 * at + 1, m, r, end, lo, write, ndim, before, best);
  }
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
};

QD_FUNC tape_view view_of(const launch_arg& a) {
  return {reinterpret_cast<std::uintptr_t>(a.data),
          a.bytes,
          {a.shape[0], a.shape[1], a.shape[2], a.shape[3]},
          a.extent_known};
}

// The reads of the recorded launches, grouped by view and indexed, and, per view written,
// the views whose reads its writes conflict with.
class tape_reads {
 public:
  tape_reads(const tape_state& t, const tape_footprints& f) {
    std::map<tape_view, std::size_t> ids;
    std::vector<std::vector<tape_read>> all, needed;
    std::vector<int> ndims;
    for (std::size_t l = 0; l < t.launches.size(); ++l)
      for (std::size_t b = f.first[l]; b < f.first[l + 1]; ++b) {
        const autodiff::access_box& box = f.boxes[b];
        if (box.kind != autodiff::access_kind::read) continue;
        const auto p = static_cast<std::size_t>(box.param);
        auto [it, fresh] = ids.try_emplace(view_of(t.launches[l].args[p]), all.size());
        if (fresh) {
          all.emplace_back();
          needed.emplace_back();
          ndims.push_back(t.launches[l].kernel->params[p].ndim);
        }
        all[it->second].push_back({l, b});
        if (box.needed) needed[it->second].push_back({l, b});
      }
    for (const auto& [view, id] : ids) {
      const int dim = narrowest_dimension(all[id], f.boxes, ndims[id]);
      views_.push_back({view, tape_read_index(std::move(all[id]), f.boxes, dim),
                        tape_read_index(std::move(needed[id]), f.boxes, dim), 0});
    }
    std::uintptr_t reach = 0;  // views_ is sorted by start: the furthest end so far
    for (view_reads& v : views_) v.reach = reach = std::max(reach, v.view.spans() ? v.view.end() : 0);
  }

  // The first read, in launch then footprint order, before launch `before` that `write` (a
  // box of an `ndim`-dimensional parameter given `arg`) conflicts with: any read for an
  // overwrite, a read whose value the adjoint needs for an accumulation.
  std::optional<tape_read> first_conflict(const launch_arg& arg, const autodiff::access_box& write, int ndim,
                                          std::size_t before) {
    const tape_view w = view_of(arg);
    const bool overwrite = write.kind == autodiff::access_kind::overwrite;
    if (last_partners_ == nullptr || !(w == last_view_)) {  // a launch's writes mostly go to one view
      auto [known, fresh] = partners_.try_emplace(w);
      if (fresh) known->second = conflicting_views(w);
      last_view_ = w;
      last_partners_ = &known->second;
    }
    std::optional<tape_read> best;
    for (const std::size_t id : *last_partners_) {
      const view_reads& v = views_[id];
      const tape_read_index& reads = overwrite ? v.all : v.needed;
      if (v.view.same_elements(w)) {
        reads.first_conflict(write, ndim, before, best);
      } else if (auto r = reads.first_before(before); r && (!best || *r < *best)) {
        best = r;
      }
    }
    return best;
  }

 private:
  struct view_reads {
    tape_view view;
    tape_read_index all, needed;
    std::uintptr_t reach;  // the furthest end of a spanning view up to this one
  };
  std::vector<view_reads> views_;  // sorted by view (start first)
  std::map<tape_view, std::vector<std::size_t>> partners_;
  tape_view last_view_;
  const std::vector<std::size_t>* last_partners_ = nullptr;

  // The dimension whose read intervals are narrowest in sum: the one a query can skip by.
  static int narrowest_dimension(const std::vector<tape_read>& reads, const std::vector<autodiff::access_box>& boxes,
                                 int ndim) {
    int best = 0;
    double best_width = 0;
    for (int d = 0; d < ndim; ++d) {
      double width = 0;
      for (const tape_read& r : reads) {
        const autodiff::access_box& b = boxes[r.box];
        width += static_cast<double>(b.hi[static_cast<std::size_t>(d)] - b.lo[static_cast<std::size_t>(d)]);
      }
      if (d == 0 || width < best_width) best = d, best_width = width;
    }
    return best;
  }

  // The read views whose reads a write through `w` may conflict with: the same view (box by
  // box), another view of the same start where either extent is unknown, or any view
  // sharing a byte with it where both are known.
  std::vector<std::size_t> conflicting_views(const tape_view& w) const {
    std::vector<std::size_t> out;
    auto starts_before = [](const view_reads& v, std::uintptr_t p) { return v.view.data < p; };
    const auto first = std::lower_bound(views_.begin(), views_.end(), w.data, starts_before);
    auto index = [&](auto it) { return static_cast<std::size_t>(it - views_.begin()); };
    if (w.spans()) {
      // Views starting before w that reach into it: walk back while something earlier could.
      for (auto it = first; it != views_.begin() && std::prev(it)->reach > w.data;) {
        --it;
        if (it->view.spans() && it->view.end() > w.data) out.push_back(index(it));
      }
      std::reverse(out.begin(), out.end());
    }
    for (auto it = first; it != views_.end() && (it->view.data == w.data || (w.spans() && it->view.data < w.end()));
         ++it) {
      const tape_view& r = it->view;
      if (r.same_elements(w) || (r.data == w.data && (!r.extent_known || !w.extent_known)) || (r.spans() && w.spans()))
        out.push_back(index(it));
    }
    return out;
  }
};

// A recorded launch whose adjoint would read data a later launch changed: overwrote, or
// accumulated into where the earlier adjoint needs the value it read. Each write is
// checked only against the reads of the views it can share elements with, through an
// index: the check grows with the tape's length about like n log n, not n².
QD_FUNC void check_overwrites(const tape_state& t) {
  const tape_footprints f = tape_footprints_of(t);
  tape_reads reads(t, f);
  for (std::size_t later = 1; later < t.launches.size(); ++later)
    for (std::size_t b = f.first[later]; b < f.first[later + 1]; ++b) {
      const autodiff::access_box& write = f.boxes[b];
      if (write.kind == autodiff::access_kind::read) continue;
      const auto& lk = *t.launches[later].kernel;
      const auto wp = static_cast<std::size_t>(write.param);
      const std::optional<tape_read> read =
          reads.first_conflict(t.launches[later].args[wp], write, lk.params[wp].ndim, later);
      if (!read) continue;
      const bool overwrite = write.kind == autodiff::access_kind::overwrite;
      const std::size_t earlier = read->launch;
      const auto& ek = *t.launches[earlier].kernel;
      throw user_error(fmt::format(
          "qd::ad::tape: launch {} (kernel '{}') {} elements of {} that launch {} (kernel '{}') read as "
          "{}; the adjoint of launch {} needs the values it read, and would see the new ones. Write each "
          "launch's results into elements (or an array) no earlier launch reads, for example one row per "
          "time step{}",
          later + 1, lk.name, overwrite ? "overwrites" : "accumulates into", param_label(lk, wp), earlier + 1, ek.name,
          param_label(ek, static_cast<std::size_t>(f.boxes[read->box].param)), earlier + 1,
          overwrite ? "" : " (an in-place update x[i] += ... after a launch that read x nonlinearly)"));
    }
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
  check_overwrites(t);
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
