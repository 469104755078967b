// A separate process for the cache and split tests: runs kernels against the
// cache directory in its environment and prints one result line. Exit 0 only
// when every result matched its host computation.
//   kernel_worker edit base|edited|edited_with_parameter
//   kernel_worker suite <id>        (kernels shared by all ids, plus ones unique to odd ids)
//   kernel_worker graph base|edited|flat   (issue 13: eight constructs in a do_while body;
//                                   flat: the same constructs at the top level of a plain kernel)
#include <quadrants/quadrants.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int n = 64;
int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("MISMATCH %s\n", what);
    ++failures;
  }
}

float host_construct(int c, float x, float z, bool edited) {
  if (c == 4 && edited) return x * 5.0f - 40.0f + z;
  return x * static_cast<float>(c + 1) + static_cast<float>(c);
}

// Eight constructs, each writing its own section of y. `edited` changes
// construct 4; `with_parameter` also adds a parameter, first in the list, that
// only construct 4 uses (every other parameter's index shifts).
void run_edit(bool edited, bool with_parameter) {
  auto body = [edited](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, auto z_value) {
    for (int c = 0; c < 8; ++c) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        if (c == 4 && edited) {
          qd::f32 t = x[i] * 5.0f;
          t = t - 40.0f;
          y[c * n + i] = t + z_value(i);
        } else {
          y[c * n + i] = x[i] * static_cast<float>(c + 1) + static_cast<float>(c);
        }
      });
    }
  };
  qd::ndarray<float, 1> x(n), y(8 * n), z(n);
  std::vector<float> hx(n), hz(n);
  for (int i = 0; i < n; ++i) {
    hx[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.5f;
    hz[static_cast<std::size_t>(i)] = static_cast<float>(i % 3);
  }
  x.from_host(hx);
  z.from_host(hz);
  qd::per_offload_observations obs;
  if (with_parameter) {
    auto k = qd::kernel(
        "edit_me", [body](qd::types::ndarray<float, 1> zz, qd::types::ndarray<float, 1> x,
                          qd::types::ndarray<float, 1> y) { body(x, y, [&](qd::i32 i) { return qd::f32(zz[i]); }); });
    k(z, x, y);
    obs = k.per_offload_cache_observations();
  } else {
    auto k = qd::kernel("edit_me", [body](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
      body(x, y, [](qd::i32) { return qd::f32(0.0f); });
    });
    k(x, y);
    obs = k.per_offload_cache_observations();
  }
  auto hy = y.to_host();
  for (int c = 0; c < 8; ++c)
    for (int i = 0; i < n; ++i)
      expect(hy[static_cast<std::size_t>(c * n + i)] ==
                 host_construct(c, hx[static_cast<std::size_t>(i)],
                                with_parameter ? hz[static_cast<std::size_t>(i)] : 0.0f, edited),
             "edit_me result");
  std::printf("compiled=%d loaded=%d total=%d fallback=%s\n", obs.constructs_compiled, obs.constructs_loaded,
              obs.frontend_constructs_total, std::string(qd::name(obs.fallback)).c_str());
  std::printf("quadrants: recompiled=%d cache_hit=%d tasks_total=%d tasks_cache_hit=%d tasks_recompiled=%d\n",
              obs.frontend_constructs_recompiled, obs.frontend_constructs_cache_hit, obs.tasks_total,
              obs.tasks_cache_hit, obs.tasks_recompiled);
}

// Kernels every suite id runs, and one that only odd ids run (a different constant).
void run_suite(int id) {
  qd::ndarray<float, 1> x(n), y(n);
  std::vector<float> hx(n);
  for (int i = 0; i < n; ++i) hx[static_cast<std::size_t>(i)] = static_cast<float>(i);
  x.from_host(hx);
  auto shared = qd::kernel("shared", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
    qd::f32 first = x[1];
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * 2.0f + first; });
    qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = y[i] + 1.0f; });
  });
  shared(x, y);
  auto hy = y.to_host();
  for (int i = 0; i < n; ++i) expect(hy[static_cast<std::size_t>(i)] == static_cast<float>(i) * 2.0f + 2.0f, "shared");
  const float own = static_cast<float>(id % 2 ? id : 0);
  auto unique = qd::kernel("unique", [own](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] + own; });
    y[0] = own;
  });
  unique(x, y);
  hy = y.to_host();
  for (int i = 1; i < n; ++i) expect(hy[static_cast<std::size_t>(i)] == static_cast<float>(i) + own, "unique");
  expect(hy[0] == own, "unique serial construct");
  auto stats = qd::offline_cache_statistics();
  std::printf("compiles=%llu hits=%llu misses=%llu rejected=%llu\n", static_cast<unsigned long long>(stats.compiles),
              static_cast<unsigned long long>(stats.hits), static_cast<unsigned long long>(stats.misses),
              static_cast<unsigned long long>(stats.rejected));
}

// The seed's headline scenario: a do_while body of eight constructs (seven parallel, one
// that counts the passes and sets the flag), run three passes; `edited` changes construct 4.
void run_graph(const std::string& variant) {
  const bool edited = variant == "edited";
  auto constructs = [edited](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y,
                             qd::types::ndarray<std::int32_t, 0> passes, qd::types::ndarray<std::int32_t, 0> again) {
    for (int c = 0; c < 7; ++c)
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        if (c == 4 && edited)
          y[c * n + i] += x[i] * 5.0f - 40.0f;
        else
          y[c * n + i] += x[i] * static_cast<float>(c + 1) + static_cast<float>(c);
      });
    qd::range_for(1, [&](qd::i32) {
      passes() = passes() + 1;
      again() = qd::select(passes() < 3, 1, 0);
    });
  };
  qd::ndarray<float, 1> x(n), y(7 * n);
  qd::ndarray<std::int32_t, 0> passes, again;
  std::vector<float> hx(n);
  for (int i = 0; i < n; ++i) hx[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.5f;
  x.from_host(hx);
  qd::per_offload_observations obs;
  int runs = 3;
  if (variant == "flat") {
    runs = 1;
    auto k = qd::kernel("graph_edit_flat",
                        [constructs](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y,
                                     qd::types::ndarray<std::int32_t, 0> passes,
                                     qd::types::ndarray<std::int32_t, 0> again) { constructs(x, y, passes, again); });
    k(x, y, passes, again);
    obs = k.per_offload_cache_observations();
  } else {
    auto k =
        qd::kernel("graph_edit", qd::graph::on,
                   [constructs](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y,
                                qd::types::ndarray<std::int32_t, 0> passes, qd::types::ndarray<std::int32_t, 0> again) {
                     qd::graph::do_while(again, [&] { constructs(x, y, passes, again); });
                   });
    k(x, y, passes, again);
    obs = k.per_offload_cache_observations();
  }
  auto hy = y.to_host();
  for (int c = 0; c < 7; ++c)
    for (int i = 0; i < n; ++i) {
      const float xi = hx[static_cast<std::size_t>(i)];
      float expected = 0.0f;
      for (int r = 0; r < runs; ++r)
        expected += c == 4 && edited ? xi * 5.0f - 40.0f : xi * static_cast<float>(c + 1) + static_cast<float>(c);
      expect(hy[static_cast<std::size_t>(c * n + i)] == expected, "graph_edit result");
    }
  expect(passes.to_host()[0] == runs, "graph_edit passes");
  std::printf("compiled=%d loaded=%d total=%d fallback=%s\n", obs.constructs_compiled, obs.constructs_loaded,
              obs.frontend_constructs_total, std::string(qd::name(obs.fallback)).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  std::string mode = argv[1], arg = argv[2];
  try {
    qd::init({.arch = qd::arch::cpu});
    if (mode == "edit")
      run_edit(arg != "base", arg == "edited_with_parameter");
    else if (mode == "suite")
      run_suite(std::atoi(arg.c_str()));
    else if (mode == "graph")
      run_graph(arg);
    else
      return 2;
  } catch (const std::exception& e) {
    std::printf("ERROR %s\n", e.what());
    return 3;
  }
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}
