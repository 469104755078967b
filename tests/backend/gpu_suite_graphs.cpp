// The per-backend suite (gpu_suite_test.cpp), continued: vectors and matrices, graph
// kernels and device graphs, meshes.
#include "backend/gpu_suite.hpp"

#include <cstdlib>

// Vectors and matrices (SPEC §11.1) and atomic demotion (§11.4): backend/suite_kernels_vec.hpp.
QD_SUITE_CASE("suite: vector arithmetic and functions agree with plain C++", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_vec_ops();
}
QD_SUITE_CASE("suite: matrix products, determinant and inverse agree with plain C++", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_mat_ops();
}
QD_SUITE_CASE("suite: vector and matrix variables reduce per component", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_vec_vars();
}
QD_SUITE_CASE("suite: elements of vector and matrix arrays, component updates and per-component atomics", A,
              QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_vec_elements();
}
QD_SUITE_CASE("suite: demoted updates and a scatter that stays atomic give plain C++'s results", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_mixed_updates();
}
QD_SUITE_CASE("suite: vector and matrix scalar parameters arrive component by component", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_vec_params();
}

// Graph kernels (issue 13): nested do_while loops run by the host loop reading each
// flag back after every pass, whole and split; concurrent regions joined.
QD_SUITE_CASE("suite: graph kernels loop while their flags are set, whole and split, and concurrent regions join", A,
              QD_SUITE_ARCHES) {
  auto loops = kernels::graph_loops();
  auto regions = kernels::concurrent_regions();
  qd_test::scratch_directory cache(std::string("suite-graphs-") + A::name);
  const int n = 6, row_count = 4;
  // Small integers: the sum is exact in any order of the reduction.
  std::vector<float> xs(n);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += xs[static_cast<std::size_t>(i)] = static_cast<float>(i % 3);
  std::vector<float> want_rows;
  int row = 0;
  do {
    int count = 0;
    do {
      ++count;
    } while (count < 10 * (row + 1));
    want_rows.push_back(static_cast<float>(count) + sum);
    ++row;
  } while (row < row_count);
  for (int variant = 0; variant < 2; ++variant) {
    CAPTURE(variant);
    if (!start<A>({.offline_cache_file_path = cache.str(),
                   .per_offload = variant ? qd::per_offload_mode::on : qd::per_offload_mode::off}))
      return;
    qd::ndarray<float, 1> x(n), rows(row_count);
    qd::ndarray<std::int32_t, 0> r, count, inner, outer;
    x.from_host(xs);
    loops(x, rows, r, count, inner, outer);
    CHECK(rows.to_host() == want_rows);
    CHECK(r.to_host()[0] == row_count);
    auto o = loops.per_offload_cache_observations();
    CHECK(o.fallback == (variant ? qd::fallback_reason::none : qd::fallback_reason::policy_per_offload_off));

    qd::ndarray<float, 1> a(9), b(5);
    const std::uint64_t forks = regions.per_offload_cache_observations().device_stream_forks;
    regions(a, b);
    // On a GPU the three regions ran on three streams of their own, joined before the last loop.
    CHECK(regions.per_offload_cache_observations().device_stream_forks == forks + (on_gpu<A>() ? 1 : 0));
    CHECK(a.to_host() == std::vector<float>{0, 1, 2, 3, -1, -1, -1, -1, -1});
    CHECK(b.to_host() == std::vector<float>{1, 4, 7, 10, 13});
    CHECK(regions.per_offload_cache_observations().fallback ==
          (variant ? qd::fallback_reason::concurrent : qd::fallback_reason::policy_per_offload_off));
    qd::reset();
  }
}

// Whether the CUDA driver has conditional nodes (12.3+), so that do_whiles run on the
// device; the emulated driver reports QD_EMULATED_CUDA_DRIVER_VERSION when set.
template <class A>
bool cuda_device_loops() {
  if (A::arch != qd::arch::cuda) return false;
  int version = 0;
  REQUIRE(qd::backend::cuda::driver().driver_version(&version) == 0);
  return version >= 12030;
}

// Plain C++ for kernels::graph_replay: its effect, and the do_while passes it ran.
int graph_replay_on_host(std::vector<float>& x, std::vector<float>& y, float s) {
  for (float& v : x) v += s;
  for (float& v : y) v *= 2.0f;
  int passes = 0;
  do {
    for (float& v : x) v *= 0.5f;
    ++passes;
  } while (x[0] > 1.0f);
  return passes;
}

// Device graphs (issue 13, docs/graphs.md): on a GPU each run of a graph kernel's tasks
// between do_while marks is recorded once and replayed while the arguments are the
// same; a different array or scalar is given to a plain run's launches in place, and
// records a device loop again. On CUDA 12.3+ a do_while is one recording (a conditional
// WHILE node), else the host loop replays its body each pass.
// The CPU launches plainly. The results are plain C++'s on every arch.
QD_SUITE_CASE("suite: graph kernels record device graphs once and replay them while the arguments stay the same", A,
              QD_SUITE_ARCHES) {
  auto k = kernels::graph_replay();
  qd_test::scratch_directory cache(std::string("suite-graph-replay-") + A::name);
  for (const std::uint64_t limit : {std::uint64_t{0}, std::uint64_t{100}}) {
    CAPTURE(limit);
    if (!start<A>({.offline_cache_file_path = cache.str(), .graph_max_iterations = limit})) return;
    const bool graphs = records_graphs<A>();
    // With graph_max_iterations the host loop counts the passes: no device loop.
    const bool device_loops = cuda_device_loops<A>() && limit == 0;
    const std::string mode = std::string(A::name) + (device_loops ? ": do_while on the device"
                                                     : graphs     ? ": do_while on the host"
                                                                  : ": plain");
    MESSAGE(mode);
    std::vector<float> hx{40.0f, 2.0f, 3.0f, 5.0f}, hy{1.0f, 2.0f};
    qd::ndarray<float, 1> x(4), y(2), other(4);
    qd::ndarray<std::int32_t, 0> flag;
    x.from_host(hx);
    y.from_host(hy);
    const auto before = k.per_offload_cache_observations();
    std::uint64_t builds = before.device_graph_builds, replays = before.device_graph_replays,
                  updates = before.device_graph_updates;
    auto launch = [&](qd::ndarray<float, 1>& xs, std::vector<float>& hxs, float s, int new_builds, int new_updates) {
      const int passes = graph_replay_on_host(hxs, hy, s);
      k(xs, y, flag, s);
      CHECK(xs.to_host() == hxs);
      CHECK(y.to_host() == hy);
      CHECK(flag.to_host()[0] == 0);
      if (graphs) {
        builds += static_cast<std::uint64_t>(new_builds);
        // Two runs: the top level once; the loop once on the device, or its body once per pass.
        const int runs = device_loops ? 2 : 1 + passes;
        replays += static_cast<std::uint64_t>(runs - new_builds);
        updates += static_cast<std::uint64_t>(new_updates);
      }
      const auto o = k.per_offload_cache_observations();
      CHECK(o.device_graph_builds == builds);
      CHECK(o.device_graph_replays == replays);
      CHECK(o.device_graph_updates == updates);
    };
    launch(x, hx, 1.0f, 2, 0);  // first launch: both runs recorded
    launch(x, hx, 1.0f, 0, 0);  // the same arguments: replayed
    launch(x, hx, 1.0f, 0, 0);
    std::vector<float> ho{9.0f, 1.0f, 1.0f, 1.0f};
    other.from_host(ho);
    // Another array, then another scalar: the top-level run's launches get them in place;
    // a device loop is recorded again, a host loop's body run updated in place on its first pass.
    const int loop_builds = device_loops ? 1 : 0, updated = device_loops ? 1 : 2;
    launch(other, ho, 1.0f, loop_builds, updated);
    launch(other, ho, 1.0f, 0, 0);
    launch(other, ho, 3.0f, loop_builds, updated);
    qd::reset();
  }

  // A limit the loop exceeds is still a qd::user_error (the host loop counts).
  if (!start<A>({.offline_cache_file_path = cache.str(), .graph_max_iterations = 2})) return;
  {
    qd::ndarray<float, 1> x(4), y(2);
    qd::ndarray<std::int32_t, 0> flag;
    x.from_host(std::vector<float>{40.0f, 2.0f, 3.0f, 5.0f});
    CHECK_THROWS_AS(k(x, y, flag, 1.0f), qd::user_error);
  }
  qd::reset();

  // Bounds checks read the error record after each task: such launches stay plain.
  if (!start<A>({.offline_cache_file_path = cache.str(), .check_out_of_bound = true})) return;
  qd::ndarray<float, 1> bx(4), by(2);
  qd::ndarray<std::int32_t, 0> bflag;
  std::vector<float> cx{40.0f, 2.0f, 3.0f, 5.0f}, cy{1.0f, 2.0f};
  bx.from_host(cx);
  by.from_host(cy);
  auto checked = kernels::graph_replay();
  for (int i = 0; i < 2; ++i) {
    graph_replay_on_host(cx, cy, 1.0f);
    checked(bx, by, bflag, 1.0f);
  }
  CHECK(bx.to_host() == cx);
  CHECK(by.to_host() == cy);
  CHECK(checked.per_offload_cache_observations().device_graph_builds == 0);
  CHECK(checked.per_offload_cache_observations().device_graph_replays == 0);
  qd::reset();
}

// A graph kernel without do_while or forks: its constructs are one device graph on a GPU.
QD_SUITE_CASE("suite: a graph kernel of plain constructs is one device graph, replayed", A, QD_SUITE_ARCHES) {
  auto k = qd::kernel("graph_plain", qd::graph::on, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + 1.0f; });
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 3.0f; });
  });
  qd_test::scratch_directory cache(std::string("suite-graph-plain-") + A::name);
  if (!start<A>({.offline_cache_file_path = cache.str()})) return;
  qd::ndarray<float, 1> x(5);
  std::vector<float> hx{0.0f, 1.0f, 2.0f, 3.0f, 4.0f};
  x.from_host(hx);
  for (int launch = 0; launch < 3; ++launch) {
    for (float& v : hx) v = (v + 1.0f) * 3.0f;
    k(x);
  }
  CHECK(x.to_host() == hx);
  const auto o = k.per_offload_cache_observations();
  CHECK(o.device_graph_builds == (records_graphs<A>() ? 1u : 0u));
  CHECK(o.device_graph_replays == (records_graphs<A>() ? 2u : 0u));
  qd::reset();
}

// Ping-pong buffers (issue 30): a time-stepping graph kernel launched 100 times with its
// two arrays swapped each time, its scalar changed every ten launches, and a fork whose
// branches run on streams of their own. On a GPU it is recorded once: each later launch
// gives the recorded kernel nodes the new addresses and scalar in place and replays.
// A shape change records again. The results are plain C++'s on every arch, and also
// where the driver refuses node updates (emulated_cuda/graph_update_refused: each launch
// with other arrays then records again).
QD_SUITE_CASE("suite: a graph kernel over ping-pong buffers is recorded once and replayed with its arrays swapped", A,
              QD_SUITE_ARCHES) {
  auto k = qd::kernel("graph_ping_pong", {"src", "dst", "side", "s"}, qd::graph::on,
                      [](qd::types::ndarray<float, 1> src, qd::types::ndarray<float, 1> dst,
                         qd::types::ndarray<float, 1> side, qd::f32 s) {
                        qd::graph::parallel(
                            [&] { qd::range_for(dst.shape(0), [&](qd::i32 i) { dst[i] = src[i] * 0.5f + s; }); },
                            [&] { qd::range_for(side.shape(0), [&](qd::i32 i) { side[i] = side[i] + 1.0f; }); });
                        qd::range_for(dst.shape(0), [&](qd::i32 i) { dst[i] = dst[i] + qd::cast<float>(i); });
                      });
  // Plain C++ of one launch (x * 0.5 is exact, so a fused multiply-add rounds alike).
  auto step = [](const std::vector<float>& src, std::vector<float>& dst, std::vector<float>& side, float s) {
    for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = src[i] * 0.5f + s;
    for (float& v : side) v += 1.0f;
    for (std::size_t i = 0; i < dst.size(); ++i) dst[i] += static_cast<float>(i);
  };
  qd_test::scratch_directory cache(std::string("suite-graph-ping-pong-") + A::name);
  if (!start<A>({.offline_cache_file_path = cache.str()})) return;
  const bool graphs = records_graphs<A>();
  const bool refused = A::arch == qd::arch::cuda && std::getenv("QD_EMULATED_CUDA_REFUSE_NODE_UPDATES") != nullptr;
  const std::uint64_t builds = !graphs ? 0 : refused ? 100 : 1, updates = graphs && !refused ? 99 : 0;
  const std::size_t n = 6;
  std::vector<float> ha(n), hb(n, 0.0f), hside(3, 0.0f);
  for (std::size_t i = 0; i < n; ++i) ha[i] = static_cast<float>(3 * i + 1);
  qd::ndarray<float, 1> a(n), b(n), side(3);
  a.from_host(ha);
  b.from_host(hb);
  side.from_host(hside);
  for (int launch = 0; launch < 100; ++launch) {
    const float s = 1.0f + static_cast<float>(launch / 10);
    if (launch % 2 == 0) {
      step(ha, hb, hside, s);
      k(a, b, side, s);
    } else {
      step(hb, ha, hside, s);
      k(b, a, side, s);
    }
  }
  CHECK(a.to_host() == ha);
  CHECK(b.to_host() == hb);
  CHECK(side.to_host() == hside);
  auto o = k.per_offload_cache_observations();
  CHECK(o.device_graph_builds == builds);
  CHECK(o.device_graph_replays == updates);
  CHECK(o.device_graph_updates == updates);
  // Each recording forks once on streams (CUDA, AMD); replays fork inside the graph.
  CHECK(o.device_stream_forks == (on_gpu<A>() ? builds : 0u));

  // Other shapes: recorded again (and again when the first shapes come back).
  std::vector<float> hc(n + 2), hd(n + 2, 0.0f);
  for (std::size_t i = 0; i < n + 2; ++i) hc[i] = static_cast<float>(i) - 2.0f;
  qd::ndarray<float, 1> c(n + 2), d(n + 2);
  c.from_host(hc);
  d.from_host(hd);
  step(hc, hd, hside, 2.0f);
  k(c, d, side, 2.0f);
  step(hd, hc, hside, 2.0f);
  k(d, c, side, 2.0f);
  step(ha, hb, hside, 3.0f);
  k(a, b, side, 3.0f);
  CHECK(c.to_host() == hc);
  CHECK(d.to_host() == hd);
  CHECK(b.to_host() == hb);
  CHECK(side.to_host() == hside);
  o = k.per_offload_cache_observations();
  CHECK(o.device_graph_builds == (graphs ? builds + 2 + (refused ? 1 : 0) : 0u));
  CHECK(o.device_graph_updates == (graphs && !refused ? updates + 1 : 0u));
  qd::reset();
}

// Two host threads launching one graph kernel with their own arrays: one holds the
// variant's device graphs at a time, the other launches plainly meanwhile; both get
// plain C++'s results.
QD_SUITE_CASE("suite: two threads launching one graph kernel each get their own results", A, QD_SUITE_ARCHES) {
  auto k = kernels::graph_replay();
  qd_test::scratch_directory cache(std::string("suite-graph-threads-") + A::name);
  if (!start<A>({.offline_cache_file_path = cache.str()})) return;
  qd::ndarray<float, 1> warm(4), warm_y(2);
  qd::ndarray<std::int32_t, 0> warm_flag;
  k(warm, warm_y, warm_flag, 1.0f);  // compiled before the threads start
  std::vector<float> got[2], want[2];
  auto worker = [&](int t) {
    qd::ndarray<float, 1> x(4), y(2);
    qd::ndarray<std::int32_t, 0> flag;
    std::vector<float> hx{30.0f + static_cast<float>(t), 2.0f, 3.0f, 5.0f}, hy{1.0f, 2.0f};
    x.from_host(hx);
    y.from_host(hy);
    for (int launch = 0; launch < 8; ++launch) {
      graph_replay_on_host(hx, hy, 1.0f + static_cast<float>(t));
      k(x, y, flag, 1.0f + static_cast<float>(t));
    }
    got[t] = x.to_host();
    want[t] = hx;
  };
  std::thread other(worker, 1);
  worker(0);
  other.join();
  CHECK(got[0] == want[0]);
  CHECK(got[1] == want[1]);
  qd::reset();
}

// qd::graph::parallel in a graph kernel on a GPU: the branches are parallel paths of the
// recorded graph (their launches captured on streams of their own), replayed later.
QD_SUITE_CASE("suite: graph::parallel branches in a do_while run as parallel paths of a device graph", A,
              QD_SUITE_ARCHES) {
  auto k = kernels::graph_parallel();
  qd_test::scratch_directory cache(std::string("suite-graph-parallel-") + A::name);
  if (!start<A>({.offline_cache_file_path = cache.str()})) return;
  qd::ndarray<float, 1> a(7), b(3);
  qd::ndarray<std::int32_t, 0> flag;
  std::vector<float> ha(7, 0.0f), hb{1.0f, 2.0f, 3.0f};
  a.from_host(ha);
  b.from_host(hb);
  for (int launch = 0; launch < 3; ++launch) {
    CAPTURE(launch);
    do {  // plain C++
      for (float& v : ha) v += 1.0f;
      for (float& v : hb) v *= 2.0f;
    } while (ha[0] < 5.0f);
    k(a, b, flag);
    CHECK(a.to_host() == ha);
    CHECK(b.to_host() == hb);
    const auto o = k.per_offload_cache_observations();
    if (records_graphs<A>()) {
      // Recorded once (its fork on branch streams where there are some), replayed by the later launches.
      CHECK(o.device_graph_builds == 1);
      CHECK(o.device_stream_forks == (on_gpu<A>() ? 1u : 0u));
      CHECK(o.device_graph_replays >= static_cast<std::uint64_t>(launch));
    } else {
      CHECK(o.device_graph_builds == 0);
      CHECK(o.device_stream_forks == 0);
    }
  }
  qd::reset();
}

// Meshes (issue 14, SPEC §11.7): relations built on the host, uploaded, read by
// qd::for_each on every arch; the kernel stays whole (`mesh`) when the split is on.
QD_SUITE_CASE("suite: a mesh Laplacian and cell means match plain C++", A, QD_SUITE_ARCHES) {
  auto k = kernels::mesh_laplacian();
  qd_test::scratch_directory cache(std::string("suite-mesh-") + A::name);
  const int n = 3;
  const auto tets = qd_test::cube_tets(n);
  const std::int32_t nv = qd_test::cube_vertices(n);
  std::vector<float> u(static_cast<std::size_t>(nv));
  for (std::int32_t i = 0; i < nv; ++i) u[static_cast<std::size_t>(i)] = static_cast<float>((i * 7) % 13) * 0.5f;
  const auto nb = qd_test::edge_neighbours(nv, tets);
  std::vector<float> want_lap(u.size()), want_mean(tets.size());
  for (std::size_t v = 0; v < u.size(); ++v) {
    float acc = 0.0f;
    for (std::int32_t w : nb[v]) acc += u[static_cast<std::size_t>(w)] - u[v];
    want_lap[v] = acc;
  }
  for (std::size_t c = 0; c < tets.size(); ++c) {
    float sum = 0.0f;
    for (std::int32_t w : tets[c]) sum += u[static_cast<std::size_t>(w)];
    want_mean[c] = sum / 4.0f;
  }
  if (!start<A>({.offline_cache_file_path = cache.str(), .per_offload = qd::per_offload_mode::on})) return;
  qd::mesh m = qd::mesh::tetrahedral(nv, tets);
  qd::ndarray<float, 1> du(nv), lap(nv), mean(static_cast<std::int64_t>(tets.size()));
  du.from_host(u);
  k(m, du, lap, mean);
  CHECK(lap.to_host() == want_lap);
  CHECK(mean.to_host() == want_mean);
  CHECK(k.per_offload_cache_observations().fallback == qd::fallback_reason::mesh);
  qd::reset();
}
