// Graph kernels and concurrent regions (SPEC §11.6, issue 13): do_while iteration counts
// and results against plain C++, nested loops, flags set by different constructs, the
// split inside loop bodies, concurrent regions, fallbacks and the errors.
// Cases below check source lines by number (__LINE__ + n), so their layout stays as written:
// clang-format off
#include <doctest/doctest.h>

#include <quadrants/quadrants.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"
#include "runtime/worker_support.hpp"

namespace {

using doctest::Contains;

// The configurations every result is checked in: the CPU whole and split, the
// reference interpreter whole and split.
struct setup {
  const char* name;
  qd::arch arch;
  qd::per_offload_mode mode;
};
const setup setups[] = {{"cpu whole", qd::arch::cpu, qd::per_offload_mode::off},
                        {"cpu split", qd::arch::cpu, qd::per_offload_mode::on},
                        {"reference whole", qd::arch::reference, qd::per_offload_mode::off},
                        {"reference split", qd::arch::reference, qd::per_offload_mode::on}};

template <class F>
void in_every_setup(F&& f, qd::config extra = {}) {
  qd_test::temp_dir cache("graph");
  for (const setup& s : setups) {
    CAPTURE(s.name);
    qd::config c = extra;
    c.arch = s.arch;
    c.per_offload = s.mode;
    c.offline_cache_file_path = cache.str();
    qd::init(c);
    f(s);
    qd::reset();
  }
}

int flag_value(qd::ndarray<std::int32_t, 0>& a) { return a.to_host()[0]; }

}  // namespace

TEST_CASE("do_while runs its body until the flag is cleared, like a C++ do-while") {
  // x halves each pass; the loop counts its passes and stops after `limit` of them.
  auto halve = qd::kernel("halve", {"x", "passes", "keep_going", "limit"}, qd::graph::on,
                          [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> passes,
                             qd::types::ndarray<std::int32_t, 0> keep_going, qd::i32 limit) {
                            qd::graph::do_while(keep_going, [&] {
                              qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 0.5f; });
                              qd::range_for(1, [&](qd::i32) {
                                passes() = passes() + 1;
                                keep_going() = qd::select(passes() < limit, 1, 0);
                              });
                            });
                          });
  in_every_setup([&](const setup&) {
    for (int limit : {1, 3, 7}) {
      CAPTURE(limit);
      std::vector<float> host{1.0f, 2.0f, 3.0f, 40.0f};
      qd::ndarray<float, 1> x(4);
      x.from_host(std::span<const float>(host));
      qd::ndarray<std::int32_t, 0> passes, keep_going;
      halve(x, passes, keep_going, limit);
      // Plain C++.
      int expected_passes = 0;
      do {
        for (float& v : host) v *= 0.5f;
        ++expected_passes;
      } while (expected_passes < limit);
      CHECK(flag_value(passes) == expected_passes);
      CHECK(flag_value(keep_going) == 0);
      CHECK(x.to_host() == host);
    }
  });
}

TEST_CASE("a graph kernel splits per construct inside do_while bodies") {
  auto k = qd::kernel("graph_split", qd::graph::on,
                      [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> keep_going) {
                        qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + 1.0f; });
                        qd::graph::do_while(keep_going, [&] {
                          qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 2.0f; });
                          qd::range_for(1, [&](qd::i32) { keep_going() = qd::select(x[0] < 100.0f, 1, 0); });
                        });
                      });
  in_every_setup([&](const setup& s) {
    qd::ndarray<float, 1> x(3);
    x.fill(1.0f);
    qd::ndarray<std::int32_t, 0> keep_going;
    k(x, keep_going);
    std::vector<float> host(3, 1.0f);
    for (float& v : host) v += 1.0f;
    do {
      for (float& v : host) v *= 2.0f;
    } while (host[0] < 100.0f);
    CHECK(x.to_host() == host);
    auto obs = k.per_offload_cache_observations();
    if (s.mode == qd::per_offload_mode::on) {
      CHECK(obs.fallback == qd::fallback_reason::none);
      CHECK(obs.frontend_constructs_total == 3);
    } else {
      CHECK(obs.frontend_constructs_total == -1);
    }
  });
}

TEST_CASE("nested do_while loops and flags set by different constructs") {
  // outer: rows pass; inner: a counter climbs to the row's target; the inner flag is set
  // by one construct, the outer flag by another.
  auto k = qd::kernel("nested", {"out", "row", "count", "inner_flag", "outer_flag"}, qd::graph::on,
                      [](qd::types::ndarray<std::int32_t, 1> out, qd::types::ndarray<std::int32_t, 0> row,
                         qd::types::ndarray<std::int32_t, 0> count, qd::types::ndarray<std::int32_t, 0> inner_flag,
                         qd::types::ndarray<std::int32_t, 0> outer_flag) {
                        qd::graph::do_while(outer_flag, [&] {
                          qd::range_for(1, [&](qd::i32) { count() = 0; });
                          qd::graph::do_while(inner_flag, [&] {
                            qd::range_for(1, [&](qd::i32) { count() = count() + 1; });
                            qd::range_for(1, [&](qd::i32) { inner_flag() = qd::select(count() < row() + 1, 1, 0); });
                          });
                          qd::range_for(1, [&](qd::i32) {
                            out[row()] = count() * 10;
                            row() = row() + 1;
                          });
                          qd::range_for(1, [&](qd::i32) { outer_flag() = qd::select(row() < out.shape(0), 1, 0); });
                        });
                      });
  in_every_setup([&](const setup&) {
    qd::ndarray<std::int32_t, 1> out(5);
    qd::ndarray<std::int32_t, 0> row, count, inner, outer;
    k(out, row, count, inner, outer);
    std::vector<std::int32_t> expected(5);
    int r = 0;
    do {
      int c = 0;
      do {
        ++c;
      } while (c < r + 1);
      expected[static_cast<std::size_t>(r)] = c * 10;
      ++r;
    } while (r < 5);
    CHECK(out.to_host() == expected);
    CHECK(flag_value(row) == 5);
  });
}

TEST_CASE("top-level values and variables inside do_while bodies keep their per-pass values") {
  // n is read from an array that the loop body changes; acc is a top-level qd::var
  // reduced in each pass and read by a later construct of the same pass.
  auto k = qd::kernel("loop_values", qd::graph::on,
                      [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 1> len,
                         qd::types::ndarray<float, 1> sums, qd::types::ndarray<std::int32_t, 0> keep_going) {
                        qd::i32 first = len[0];
                        qd::graph::do_while(keep_going, [&] {
                          qd::i32 n = len[0];
                          qd::var<float> acc = 0.0f;
                          qd::range_for(n, [&](qd::i32 i) { acc += x[i]; });
                          qd::range_for(1, [&](qd::i32) {
                            sums[len[0] - 1] = acc + qd::cast<float>(first) * 1000.0f;
                            len[0] = len[0] - 1;
                            keep_going() = qd::select(len[0] > 0, 1, 0);
                          });
                        });
                      });
  in_every_setup([&](const setup&) {
    std::vector<float> xs{1, 2, 3, 4, 5};
    qd::ndarray<float, 1> x(5), sums(5);
    x.from_host(std::span<const float>(xs));
    qd::ndarray<std::int32_t, 1> len(1);
    len.fill(5);
    qd::ndarray<std::int32_t, 0> keep_going;
    k(x, len, sums, keep_going);
    std::vector<float> expected(5);
    int n = 5;
    do {
      float acc = 0;
      for (int i = 0; i < n; ++i) acc += xs[static_cast<std::size_t>(i)];
      expected[static_cast<std::size_t>(n - 1)] = acc + 5000.0f;
      --n;
    } while (n > 0);
    CHECK(sums.to_host() == expected);
  });
}

TEST_CASE("graph_max_iterations stops a do_while that runs too long") {
  auto forever = qd::kernel("forever", {"x", "keep_going"}, qd::graph::on,
                            [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 0> keep_going) {
                              qd::graph::do_while(keep_going, [&] {
                                qd::range_for(1, [&](qd::i32) {
                                  x[0] = x[0] + 1;
                                  keep_going() = 1;
                                });
                              });
                            });
  in_every_setup(
      [&](const setup&) {
        qd::ndarray<std::int32_t, 1> x(1);
        qd::ndarray<std::int32_t, 0> keep_going;
        CHECK_THROWS_WITH_AS(forever(x, keep_going),
                             Contains("kernel 'forever': a qd::graph::do_while ran 10 passes (graph_max_iterations)"),
                             qd::user_error);
        CHECK(x.to_host()[0] == 10);
      },
      {.graph_max_iterations = 10});
  {
    qd_test::scoped_env env("QD_GRAPH_MAX_ITERATIONS", "4");
    qd_test::init_cpu();
    CHECK(qd::current_settings().graph_max_iterations == 4);
    qd::reset();
  }
}

TEST_CASE("graph statements in the wrong place are errors naming the kernel") {
  qd_test::init_cpu();
  qd::ndarray<float, 1> x(4);
  qd::ndarray<std::int32_t, 0> flag;
  auto not_graph = qd::kernel("not_graph", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> f) {
    qd::graph::do_while(f, [&] { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }); });
  });
  CHECK_THROWS_WITH_AS(not_graph(x, flag), Contains("kernel 'not_graph': qd::graph::do_while is only allowed in a graph kernel"),
                       qd::user_error);
  auto in_loop = qd::kernel("in_loop", qd::graph::on,
                            [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> f) {
                              qd::range_for(x.shape(0), [&](qd::i32 i) {
                                qd::graph::do_while(f, [&] { x[i] = 1.0f; });
                              });
                            });
  CHECK_THROWS_WITH_AS(in_loop(x, flag), Contains("kernel 'in_loop': qd::graph::do_while must be at the top level"),
                       qd::user_error);
  auto in_if = qd::kernel("in_if", qd::graph::on, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> f) {
    qd::if_(f() != 0, [&] { qd::graph::do_while(f, [&] { x[0] = 1.0f; }); });
  });
  CHECK_THROWS_WITH_AS(in_if(x, flag), Contains("kernel 'in_if': qd::graph::do_while must be at the top level"),
                       qd::user_error);
  auto parallel_outside = qd::kernel("parallel_outside", [](qd::types::ndarray<float, 1> x) {
    qd::graph::parallel([&] { x[0] = 1.0f; }, [&] { x[1] = 2.0f; });
  });
  CHECK_THROWS_WITH_AS(parallel_outside(x), Contains("kernel 'parallel_outside': qd::graph::parallel is only allowed in a graph kernel"),
                       qd::user_error);
  auto concurrent_in_loop = qd::kernel("concurrent_in_loop", qd::graph::on,
                                       [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> f) {
                                         qd::graph::do_while(f, [&] {
                                           qd::concurrent([&] { x[0] = 1.0f; }, [&] { x[1] = 2.0f; });
                                         });
                                       });
  CHECK_THROWS_WITH_AS(concurrent_in_loop(x, flag),
                       Contains("kernel 'concurrent_in_loop': qd::concurrent is not allowed inside a qd::graph::do_while body"),
                       qd::user_error);
  auto do_while_in_branch = qd::kernel("do_while_in_branch", qd::graph::on,
                                       [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> f) {
                                         qd::graph::parallel([&] { qd::graph::do_while(f, [&] { x[0] = 1.0f; }); },
                                                             [&] { x[1] = 2.0f; });
                                       });
  CHECK_THROWS_WITH_AS(do_while_in_branch(x, flag),
                       Contains("kernel 'do_while_in_branch': qd::graph::do_while is not allowed inside a concurrent branch"),
                       qd::user_error);
  qd::reset();
}

TEST_CASE("editing one construct of a do_while body recompiles only it, across processes") {
  // The seed's headline scenario (issue 13): the graph is rebuilt from cached modules.
  qd_test::temp_dir cache("graph-edit");
  std::vector<std::string> env = {"XDG_CACHE_HOME=" + cache.str(), "QD_PER_OFFLOAD=on", "QD_LOG_LEVEL=warn"};
  auto base = qd_test::run_worker(env, "graph base");
  auto edited = qd_test::run_worker(env, "graph edited");
  auto again = qd_test::run_worker(env, "graph base");
  // Keys do not depend on where a construct sits: the same constructs at the top level
  // of a plain kernel are all in the cache already.
  auto flat = qd_test::run_worker(env, "graph flat");
  INFO(base.output, edited.output, again.output, flat.output);
  CHECK(base.exit_code == 0);
  CHECK(base.output.find("compiled=8 loaded=0 total=8 fallback=none") != std::string::npos);
  CHECK(edited.exit_code == 0);
  CHECK(edited.output.find("compiled=1 loaded=7 total=8 fallback=none") != std::string::npos);
  CHECK(again.exit_code == 0);
  CHECK(again.output.find("compiled=0 loaded=8 total=8 fallback=none") != std::string::npos);
  CHECK(flat.exit_code == 0);
  CHECK(flat.output.find("compiled=0 loaded=8 total=8 fallback=none") != std::string::npos);
}

TEST_CASE("editing one construct of a do_while body recompiles only it, in one process") {
  qd_test::temp_dir cache("graph-edit-one");
  auto make = [](bool edited) {
    return qd::kernel("edit_in_loop", qd::graph::on,
                      [edited](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> again) {
                        qd::graph::do_while(again, [&] {
                          for (int c = 0; c < 5; ++c)
                            qd::range_for(x.shape(0), [&](qd::i32 i) {
                              x[i] = x[i] + (c == 2 && edited ? 100.0f : static_cast<float>(c));
                            });
                          qd::range_for(1, [&](qd::i32) { again() = qd::select(x[0] < 30.0f, 1, 0); });
                        });
                      });
  };
  float expected[2] = {};
  for (int edited = 0; edited < 2; ++edited) {
    float v = 0.0f;
    do {
      for (int c = 0; c < 5; ++c) v += c == 2 && edited ? 100.0f : static_cast<float>(c);
    } while (v < 30.0f);
    expected[edited] = v;
  }
  for (int run = 0; run < 3; ++run) {
    const bool edited = run == 1;
    CAPTURE(run);
    qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = cache.str(), .per_offload = qd::per_offload_mode::on});
    auto k = make(edited);
    qd::ndarray<float, 1> x(8);
    qd::ndarray<std::int32_t, 0> again;
    k(x, again);
    CHECK(x.to_host() == std::vector<float>(8, expected[edited ? 1 : 0]));
    auto obs = k.per_offload_cache_observations();
    CHECK(obs.frontend_constructs_total == 6);
    CHECK(obs.constructs_compiled == (run == 0 ? 6 : run == 1 ? 1 : 0));
    CHECK(obs.constructs_loaded == (run == 0 ? 0 : run == 1 ? 5 : 6));
    qd::reset();
  }
}

TEST_CASE("qd::concurrent regions all run and join; the kernel stays whole") {
  constexpr int first_branch_line = __LINE__ + 6;
  auto k = qd::kernel("regions", {"a", "b", "total"},
                      [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> total) {
                        qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = qd::cast<float>(i); });
                        qd::concurrent(
                            [&] {
                              qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = a[i] * 2.0f; });
                              qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = a[i] + 1.0f; });
                            },
                            [&] { qd::range_for(b.shape(0), [&](qd::i32 i) { b[i] = 7.0f; }); },
                            // Disjoint parts of one array are fine.
                            [&] { qd::range_for(0, 2, [&](qd::i32 i) { total[i] = 1.0f; }); },
                            [&] { qd::range_for(2, 4, [&](qd::i32 i) { total[i] = 2.0f; }); });
                        qd::range_for(total.shape(0), [&](qd::i32 i) { total[i] = total[i] + a[i] + b[i]; });
                      });
  in_every_setup([&](const setup& s) {
    qd_test::log_capture logs;
    qd::ndarray<float, 1> a(4), b(4), total(4);
    k(a, b, total);
    std::vector<float> ha(4), hb(4, 7.0f), ht{1, 1, 2, 2};
    for (int i = 0; i < 4; ++i) {
      ha[static_cast<std::size_t>(i)] = static_cast<float>(i) * 2.0f + 1.0f;
      ht[static_cast<std::size_t>(i)] += ha[static_cast<std::size_t>(i)] + 7.0f;
    }
    CHECK(a.to_host() == ha);
    CHECK(b.to_host() == hb);
    CHECK(total.to_host() == ht);
    auto obs = k.per_offload_cache_observations();
    CHECK(obs.frontend_constructs_total == -1);
    if (s.mode == qd::per_offload_mode::on) {
      CHECK(obs.fallback == qd::fallback_reason::concurrent);
      // Every fallback detail names a source line: here the first branch's first statement.
      INFO(obs.fallback_detail);
      CHECK(obs.fallback_detail.starts_with("a qd::concurrent with 4 branches (the first at "));
      CHECK(obs.fallback_detail.ends_with("graph_test.cpp:" + std::to_string(first_branch_line) +
                                          ") runs them at once, so the kernel stays one unit"));
      CHECK(logs.count(qd::log_level::debug,
                       "[PER_OFFLOAD] kernel 'regions' stays whole-kernel: concurrent (a qd::concurrent with 4 branches") == 1);
    }
  }, {.log_level = qd::log_level::debug});
}

TEST_CASE("graph::parallel branches inside a do_while run each pass") {
  auto k = qd::kernel("forked_loop", qd::graph::on,
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 0> keep_going) {
                        qd::graph::do_while(keep_going, [&] {
                          qd::graph::parallel([&] { qd::range_for(1, [&](qd::i32) { x[0] = x[0] + 1; }); },
                                              [&] { qd::range_for(1, [&](qd::i32) { x[1] = x[1] + 10; }); });
                          qd::range_for(1, [&](qd::i32) { keep_going() = qd::select(x[0] < 4, 1, 0); });
                        });
                      });
  in_every_setup([&](const setup& s) {
    qd::ndarray<std::int32_t, 1> x(2);
    qd::ndarray<std::int32_t, 0> keep_going;
    k(x, keep_going);
    CHECK(x.to_host() == std::vector<std::int32_t>{4, 40});
    if (s.mode == qd::per_offload_mode::on)
      CHECK(k.per_offload_cache_observations().fallback == qd::fallback_reason::concurrent);
  });
}

TEST_CASE("concurrent branches that provably write the same elements are refused") {
  qd_test::init_cpu();
  qd::ndarray<float, 1> x(8);
  qd::ndarray<float, 0> s;
  auto same_loop = qd::kernel("same_loop", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::concurrent([&] { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }); },
                   [&] { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 2.0f; }); });
  });
  CHECK_THROWS_WITH_AS(same_loop(x),
                       Contains("kernel 'same_loop': branches 1 and 2 of a qd::concurrent both write the same elements "
                                "of parameter 'x'"),
                       qd::user_error);
  auto overlap = qd::kernel("overlap", [](qd::types::ndarray<float, 1> x) {
    qd::concurrent([&] { qd::range_for(0, 5, [&](qd::i32 i) { x[i] = 1.0f; }); }, [&] { x[4] = 2.0f; });
  });
  CHECK_THROWS_WITH_AS(overlap(x), Contains("branches 1 and 2 of a qd::concurrent both write the same elements"), qd::user_error);
  auto scalar = qd::kernel("scalar", [](qd::types::ndarray<float, 0> s) {
    qd::concurrent([&] { s() = 1.0f; }, [&] { s() = 2.0f; });
  });
  CHECK_THROWS_WITH_AS(scalar(s), Contains("kernel 'scalar': branches 1 and 2"), qd::user_error);
  // Not provable (a condition, a data-dependent index): allowed, documented as a race.
  auto unproven = qd::kernel("unproven", [](qd::types::ndarray<float, 1> x) {
    qd::concurrent([&] { qd::range_for(x.shape(0), [&](qd::i32 i) { qd::if_(i > 3, [&] { x[i] = 1.0f; }); }); },
                   [&] { qd::range_for(0, 4, [&](qd::i32 i) { x[i] = 2.0f; }); });
  });
  CHECK_NOTHROW(unproven(x));
  auto shifted = qd::kernel("shifted", [](qd::types::ndarray<float, 1> x) {
    qd::concurrent([&] { qd::range_for(0, 4, [&](qd::i32 i) { x[i] = 1.0f; }); },
                   [&] { qd::range_for(0, 4, [&](qd::i32 i) { x[i + 4] = 2.0f; }); });
  });
  CHECK_NOTHROW(shifted(x));
  CHECK(x.to_host() == std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2});
  qd::reset();
}

TEST_CASE("each do_while pass draws its own random numbers, alike in every variant") {
  auto k = qd::kernel("draws", qd::graph::on,
                      [](qd::types::ndarray<float, 1> out, qd::types::ndarray<std::int32_t, 0> pass,
                         qd::types::ndarray<std::int32_t, 0> keep_going) {
                        qd::graph::do_while(keep_going, [&] {
                          qd::range_for(1, [&](qd::i32) {
                            out[pass()] = qd::random<float>();
                            pass() = pass() + 1;
                            keep_going() = qd::select(pass() < out.shape(0), 1, 0);
                          });
                        });
                      });
  std::vector<std::vector<float>> results;
  in_every_setup(
      [&](const setup&) {
        qd::ndarray<float, 1> out(4);
        qd::ndarray<std::int32_t, 0> pass, keep_going;
        k(out, pass, keep_going);
        results.push_back(out.to_host());
      },
      {.random_seed = 5});
  REQUIRE(results.size() == 4);
  for (const auto& r : results) CHECK(r == results[0]);
  const auto& r = results[0];
  CHECK(r[0] != r[1]);
  CHECK(r[1] != r[2]);
  CHECK(r[2] != r[3]);
}

TEST_CASE("a graph kernel's IR shows its marks") {
  qd_test::init_cpu();
  auto k = qd::kernel("shown", qd::graph::on, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> f) {
    qd::graph::do_while(f, [&] {
      qd::graph::parallel([&] { x[0] = 1.0f; }, [&] { x[1] = 2.0f; });
    });
  });
  const std::string text = k.ir();
  CHECK_MESSAGE(text.find("graph_mark i32 loop_begin flag #1") != std::string::npos, text);
  CHECK(text.find("graph_mark i32 fork_begin qd::graph::parallel") != std::string::npos);
  CHECK(text.find("graph_mark i32 fork_next") != std::string::npos);
  CHECK(text.find("graph_mark i32 fork_end") != std::string::npos);
  CHECK(text.find("graph_mark i32 loop_end") != std::string::npos);
  qd::reset();
}

TEST_CASE("a counter decremented by a serial statement of the body; fork regions back to back; one-branch forks") {
  // The counter's initial value is the pass count (do-while: at least one pass).
  auto countdown = qd::kernel("countdown", qd::graph::on,
                              [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 0> counter) {
                                qd::graph::do_while(counter, [&] {
                                  qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + 1; });
                                  counter() = counter() - 1;  // a serial construct at the top level of the body
                                });
                              });
  // Region B reads what region A wrote: each fork joins before the next starts.
  auto regions = qd::kernel("back_to_back", qd::graph::on,
                            [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y,
                               qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b) {
                              qd::graph::parallel([&] { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }); },
                                                  [&] { qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = 2.0f; }); });
                              qd::graph::parallel([&] { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 10.0f; }); },
                                                  [&] { qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = y[i] * 10.0f; }); });
                              qd::graph::parallel([&] { a[0] = x[0] + 1.0f; }, [&] { b[0] = y[0] + 1.0f; });
                              qd::graph::parallel([&] { a[1] = a[0] * 2.0f; });  // one branch: a plain chain
                            });
  in_every_setup([&](const setup&) {
    for (int count : {1, 5, 10}) {
      CAPTURE(count);
      qd::ndarray<std::int32_t, 1> x(8);
      qd::ndarray<std::int32_t, 0> counter;
      counter.fill(count);
      countdown(x, counter);
      CHECK(flag_value(counter) == 0);
      CHECK(x.to_host() == std::vector<std::int32_t>(8, count));
    }
    qd::ndarray<float, 1> x(300), y(300), a(2), b(1);
    regions(x, y, a, b);
    CHECK(x.to_host() == std::vector<float>(300, 10.0f));
    CHECK(y.to_host() == std::vector<float>(300, 20.0f));
    CHECK(a.to_host() == std::vector<float>{11.0f, 22.0f});
    CHECK(b.to_host() == std::vector<float>{21.0f});
  });
}

TEST_CASE("many passes of a three-branch fork join every time") {
  auto k = qd::kernel("fork_passes", qd::graph::on,
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 0> passes,
                         qd::types::ndarray<std::int32_t, 0> again) {
                        qd::graph::do_while(again, [&] {
                          qd::graph::parallel([&] { qd::range_for(1, [&](qd::i32) { x[0] = x[0] + 1; }); },
                                              [&] { qd::range_for(1, [&](qd::i32) { x[1] = x[1] + 2; }); },
                                              [&] { qd::range_for(1, [&](qd::i32) { x[2] = x[2] + x[0] - x[0] + 3; }); });
                          qd::range_for(1, [&](qd::i32) {
                            x[3] = x[0] + x[1] + x[2];  // after the join: every branch's write of this pass
                            passes() = passes() + 1;
                            again() = qd::select(passes() < 2000, 1, 0);
                          });
                        });
                      });
  qd_test::init_cpu();
  qd::ndarray<std::int32_t, 1> x(4);
  qd::ndarray<std::int32_t, 0> passes, again;
  k(x, passes, again);
  CHECK(x.to_host() == std::vector<std::int32_t>{2000, 4000, 6000, 12000});
  qd::reset();
}
