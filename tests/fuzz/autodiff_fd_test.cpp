// The differential autodiff fuzzer (issue 27): generated small kernels and tapes of two
// or three launches over four f64 arrays, in-place updates and values carried through
// serial loops (short and longer than the adjoint's value stacks) included. Every case is
// either refused with a qd::user_error (at kernel.grad or tape.backward()) or its
// gradient agrees with central finite differences of the same launches; a gradient that
// disagrees is a silent wrong gradient, and the test fails on any. Runs on the reference
// backend (no compiler in the loop); QD_AUTODIFF_FUZZ_CASES sets the number of cases.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <quadrants/quadrants.hpp>

namespace {

using vec = std::vector<double>;
using d1 = qd::types::ndarray<double, 1, qd::needs_grad>;
using d0 = qd::types::ndarray<double, 0, qd::needs_grad>;
constexpr int n_arrays = 4;
constexpr std::int64_t n = 4;

// An expression over the arrays' elements: a tree in prefix order.
struct expr {
  enum kind : std::uint8_t { constant, element, add, sub, mul, sin, tanh, square } what = constant;
  int array = 0;  // element: which array
  int index = 0;  // element: 0 loop index i, 1 mirrored (n - 1 - i), 2 + c the constant c
  double value = 0;
  int lhs = -1, rhs = -1;
};

// One update `arrays[target][index] op= e`. With carry_steps > 0 the value goes through
// a serial loop carrying a variable nonlinearly: p = e; for carry_steps: p = tanh(p * f + 0.25).
struct update {
  enum kind : std::uint8_t { store, accumulate, atomic_add } what = store;
  int target = 0, index = 0, value = 0;
  int carry_steps = 0, carry_factor = -1;  // f: an expression
};

// One statement: a parallel loop over n holding updates, or one update at the top level.
struct statement {
  bool loop = true;
  std::vector<update> updates;
};

struct program {
  std::vector<expr> nodes;
  std::vector<statement> body;
};

class generator {
 public:
  explicit generator(std::uint64_t seed) : rng_(seed) {}

  // `target` >= 0: every update writes array `target` and reads only arrays up to it
  // (a launch order that tapes accept more often); -1: any array.
  program kernel(int target) {
    program p;
    // Ordered: one kernel in three also reads the array it updates (in place).
    reads_ = target < 0 ? n_arrays - 1 : pick(0, 2) == 0 ? target : target - 1;
    const int statements = pick(1, 2);
    for (int s = 0; s < statements; ++s) {
      statement st;
      st.loop = pick(0, 4) != 0;
      const int updates = st.loop ? pick(1, 2) : 1;
      for (int u = 0; u < updates; ++u) {
        update up;
        up.what = static_cast<update::kind>(pick(0, 2));
        up.target = target >= 0 ? target : pick(0, n_arrays - 1);
        const int shifted = target >= 0 ? 7 : 3;  // one update in `shifted + 1` takes another index than i
        up.index = st.loop ? (pick(0, shifted) == 0 ? pick(0, 2 + static_cast<int>(n) - 1) : 0)
                           : 2 + pick(0, static_cast<int>(n) - 1);
        if (!st.loop && up.what == update::atomic_add) up.what = update::accumulate;
        up.value = tree(p, st.loop, 0);
        if (pick(0, 3) == 0) {  // through a carried loop, short or longer than the adjoint's value stacks (64)
          static constexpr int steps[] = {1, 3, 70, 300};
          up.carry_steps = steps[pick(0, 3)];
          up.carry_factor = tree(p, st.loop, 1);
        }
        st.updates.push_back(up);
      }
      p.body.push_back(st);
    }
    return p;
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  std::mt19937_64 rng_;
  int reads_ = n_arrays - 1;  // the highest array an expression reads

  int tree(program& p, bool in_loop, int depth) {
    expr e;
    const int choice = depth >= 3 ? pick(0, 3) : pick(0, 9);
    if (choice == 0) {
      e.what = expr::constant;
      e.value = 0.25 * pick(-4, 4);
    } else if (choice <= 3) {
      e.what = expr::element;
      e.array = pick(0, reads_);
      e.index = in_loop && pick(0, 2) != 0 ? pick(0, 1) : 2 + pick(0, static_cast<int>(n) - 1);
    } else {
      e.what = static_cast<expr::kind>(expr::add + (choice - 4));
      e.lhs = tree(p, in_loop, depth + 1);
      if (e.what <= expr::mul) e.rhs = tree(p, in_loop, depth + 1);
    }
    p.nodes.push_back(e);
    return static_cast<int>(p.nodes.size()) - 1;
  }
};

// The program as C++-like text, for failure messages.
std::string text(const program& p, int k) {
  const expr& e = p.nodes[static_cast<std::size_t>(k)];
  static const char* names = "abcd";
  static const char* index[] = {"i", "n-1-i"};
  switch (e.what) {
    case expr::constant: return std::to_string(e.value);
    case expr::element:
      return std::string(1, names[e.array]) + "[" + (e.index < 2 ? index[e.index] : std::to_string(e.index - 2)) + "]";
    case expr::add: return "(" + text(p, e.lhs) + " + " + text(p, e.rhs) + ")";
    case expr::sub: return "(" + text(p, e.lhs) + " - " + text(p, e.rhs) + ")";
    case expr::mul: return "(" + text(p, e.lhs) + " * " + text(p, e.rhs) + ")";
    case expr::sin: return "sin(" + text(p, e.lhs) + ")";
    case expr::tanh: return "tanh(" + text(p, e.lhs) + ")";
    case expr::square: return "sq(" + text(p, e.lhs) + ")";
  }
  return "?";
}
std::string text(const program& p) {
  std::string out;
  static const char* names = "abcd";
  static const char* index[] = {"i", "n-1-i"};
  static const char* ops[] = {" = ", " += ", " atomic+= "};
  for (const statement& st : p.body) {
    out += st.loop ? "  for i: " : "  top: ";
    for (const update& u : st.updates) {
      std::string v = text(p, u.value);
      if (u.carry_steps > 0)
        v = "carry(" + v + ", " + std::to_string(u.carry_steps) + " x tanh(p * " + text(p, u.carry_factor) +
            " + 0.25))";
      out += std::string(1, names[u.target]) + "[" + (u.index < 2 ? index[u.index] : std::to_string(u.index - 2)) +
             "]" + ops[u.what] + v + "; ";
    }
    out += "\n";
  }
  return out;
}

// Traces program `p` over the four arrays (inside a kernel's lambda).
struct tracer {
  const program& p;
  d1* arrays[n_arrays];

  qd::i32 index_of(int index, qd::i32 i) const {
    if (index == 0) return i;
    if (index == 1) return qd::i32(static_cast<std::int32_t>(n - 1)) - i;
    return qd::i32(index - 2);
  }
  qd::f64 value(int k, qd::i32 i) const {
    const expr& e = p.nodes[static_cast<std::size_t>(k)];
    switch (e.what) {
      case expr::constant: return qd::f64(e.value);
      case expr::element: return qd::f64((*arrays[e.array])[index_of(e.index, i)]);
      case expr::add: return value(e.lhs, i) + value(e.rhs, i);
      case expr::sub: return value(e.lhs, i) - value(e.rhs, i);
      case expr::mul: return value(e.lhs, i) * value(e.rhs, i);
      case expr::sin: return qd::sin(value(e.lhs, i));
      case expr::tanh: return qd::tanh(value(e.lhs, i));
      case expr::square: {
        qd::f64 v = value(e.lhs, i);
        return v * v;
      }
    }
    return qd::f64(0.0);
  }
  qd::f64 carried(const update& u, qd::i32 i) const {
    qd::var<double> c = value(u.value, i);
    qd::range_for(u.carry_steps, [&](qd::i32) { c = qd::tanh(c * value(u.carry_factor, i) + 0.25); });
    return c;
  }
  void apply(const update& u, qd::i32 i) const {
    d1& t = *arrays[u.target];
    const qd::i32 at = index_of(u.index, i);
    const qd::f64 v = u.carry_steps > 0 ? carried(u, i) : value(u.value, i);
    if (u.what == update::store)
      t[at] = v;
    else if (u.what == update::accumulate)
      t[at] += v;
    else
      qd::atomic_add(t[at], v);
  }
  void run() const {
    for (const statement& s : p.body) {
      if (s.loop) {
        qd::range_for(static_cast<std::int32_t>(n), [&](qd::i32 i) {
          for (const update& u : s.updates) apply(u, i);
        });
      } else {
        apply(s.updates[0], qd::i32(0));
      }
    }
  }
};

auto make_kernel(std::string name, const program* p) {
  return qd::kernel(std::move(name), {"a", "b", "c", "d"}, [p](d1 a, d1 b, d1 c, d1 d) {
    tracer{*p, {&a, &b, &c, &d}}.run();
  });
}

enum class verdict { refused, agreed, mismatch, unstable };

struct case_result {
  verdict what = verdict::agreed;
  std::string detail;
  int carried_loops = 0;  // updates whose value went through a carried serial loop
};

case_result run_case(std::uint64_t seed) {
  generator g(seed);
  const int launches = g.pick(2, 3);
  std::vector<program> programs;
  const bool ordered = g.pick(0, 2) != 0;
  for (int l = 0; l < launches; ++l) programs.push_back(g.kernel(ordered ? l + 1 : -1));
  // One kernel per launch; the loss kernel sums w . a_k over every array.
  std::vector<decltype(make_kernel("", nullptr))> kernels;
  for (int l = 0; l < launches; ++l)
    kernels.push_back(make_kernel("ad_fuzz_" + std::to_string(seed) + "_" + std::to_string(l),
                                  &programs[static_cast<std::size_t>(l)]));
  auto loss_kernel = qd::kernel("ad_fuzz_loss", {"a", "b", "c", "d", "loss"}, [](d1 a, d1 b, d1 c, d1 d, d0 loss) {
    qd::range_for(static_cast<std::int32_t>(n), [&](qd::i32 i) {
      qd::f64 wi = qd::cast<double>(i) * 0.25 + 0.5;
      loss() += wi * a[i] + (1.0 - 0.1 * wi) * b[i] + 0.3 * wi * c[i] + (0.7 - 0.2 * wi) * d[i];
    });
  });
  vec start(n_arrays * n);
  for (std::size_t e = 0; e < start.size(); ++e)
    start[e] = 0.3 + 0.5 * std::sin(1.7 * static_cast<double>(e) + static_cast<double>(seed % 7));

  // Runs the launches from `x0`; with `grads`, records a tape and fills the gradients.
  auto run = [&](const vec& x0, vec* grads) -> double {
    std::vector<qd::ndarray<double, 1>> arrays;
    for (int k = 0; k < n_arrays; ++k) {
      arrays.emplace_back(n, qd::needs_grad);
      arrays.back().from_host(vec(x0.begin() + k * n, x0.begin() + (k + 1) * n));
      arrays.back().grad().fill(0.0);
    }
    qd::ndarray<double, 0> loss(qd::needs_grad);
    loss.fill(0.0);
    {
      qd::ad::tape tape(loss);
      for (auto& k : kernels) k(arrays[0], arrays[1], arrays[2], arrays[3]);
      loss_kernel(arrays[0], arrays[1], arrays[2], arrays[3], loss);
      if (grads) {
        tape.backward();
        grads->clear();
        for (auto& a : arrays) {
          vec gk = a.grad().to_host();
          grads->insert(grads->end(), gk.begin(), gk.end());
        }
      }
    }
    return loss.to_host()[0];
  };

  vec adjoint;
  double value = 0;
  try {
    value = run(start, &adjoint);
  } catch (const qd::user_error& e) {
    return {verdict::refused, e.what()};
  }
  // Differences of a large loss lose digits to rounding (1e-16 |L| / h): set aside.
  if (!std::isfinite(value) || std::abs(value) > 1e3) return {verdict::unstable, "loss " + std::to_string(value)};
  const double h = 1e-6;
  double worst = 0;
  std::string where;
  for (std::size_t j = 0; j < start.size(); ++j) {
    vec hi = start, lo = start;
    hi[j] += h;
    lo[j] -= h;
    const double fd = (run(hi, nullptr) - run(lo, nullptr)) / (2 * h);
    double err = std::abs(fd - adjoint[j]) / std::max(1.0, std::abs(fd));
    if (std::isnan(err)) err = std::numeric_limits<double>::infinity();  // a NaN on either side is a mismatch
    if (err > worst)
      worst = err, where = "element " + std::to_string(j) + ": adjoint " + std::to_string(adjoint[j]) +
                           ", differences " + std::to_string(fd);
  }
  if (worst > 1e-5) {
    for (const program& p : programs) where += "\n launch:\n" + text(p);
    return {verdict::mismatch, where};
  }
  int carried = 0;
  for (const program& p : programs)
    for (const statement& st : p.body)
      for (const update& u : st.updates) carried += u.carry_steps > 0 ? 1 : 0;
  return {verdict::agreed, {}, carried};
}

}  // namespace

TEST_CASE("generated kernels and tapes: every gradient is refused or agrees with central differences in f64") {
  qd::init({.arch = qd::arch::reference});
  int cases = 300;
  if (const char* env = std::getenv("QD_AUTODIFF_FUZZ_CASES")) cases = std::atoi(env);
  std::map<std::string, int> refused;
  int agreed = 0, mismatched = 0, unstable = 0, agreed_carried = 0;
  for (std::uint64_t seed = 1; seed <= static_cast<std::uint64_t>(cases); ++seed) {
    case_result r = run_case(seed);
    if (r.what == verdict::refused) {
      std::string kind = r.detail.find("qd::ad::tape") != std::string::npos ? "tape: " : "kernel: ";
      for (const char* k : {"global data access rule", "accumulation into", "accumulates into", "overwrites",
                            "parallel qd::range_for", "a race", "same array"})
        if (r.detail.find(k) != std::string::npos) {
          kind += k;
          break;
        }
      ++refused[kind];
    } else if (r.what == verdict::agreed) {
      ++agreed;
      agreed_carried += r.carried_loops > 0 ? 1 : 0;
    } else if (r.what == verdict::unstable) {
      ++unstable;
    } else {
      ++mismatched;
      FAIL_CHECK("seed " << seed << ": a silent wrong gradient: " << r.detail);
    }
  }
  std::string figures;
  int total_refused = 0;
  for (const auto& [k, c] : refused)
    figures += "  refused (" + k + "): " + std::to_string(c) + "\n", total_refused += c;
  MESSAGE("cases " << cases << ", refused " << total_refused << ", agreed with central differences " << agreed << " ("
                   << agreed_carried << " with a carried loop)"
                   << ", set aside (loss above 1e3) " << unstable << ", silent mismatches " << mismatched << "\n"
                   << figures);
  CHECK(agreed > cases / 5);           // the generator must keep producing accepted cases
  CHECK(agreed_carried > cases / 20);  // ... and accepted carried loops
  CHECK(mismatched == 0);
}
