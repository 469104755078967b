// Arrays of structs (SPEC §13.6) against plain C++ on the CPU and the reference
// backend: members read and written by name through p[i], AoS and SoA host layouts
// running one compiled kernel, members of a struct parameter, atomics through qd::ref,
// and qd::external_array of vectors and matrices.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"

using doctest::Contains;

namespace {

// GCC spells member names (lang/reflect.hpp); other compilers give members' positions.
#if defined(__GNUC__) && !defined(__clang__)
constexpr bool member_names = true;
#else
constexpr bool member_names = false;
#endif

using qd_test::init_arch;
constexpr auto& arches = qd_test::cpu_and_reference;

struct particle_k {  // kernel side
  qd::vec3f x, v;
  qd::f32 m;
  qd::i32 hits;
  qd::mat2f r;
  qd::f64 energy;
};
struct particle {  // host side: the same members, host types
  std::array<float, 3> x, v;
  float m;
  std::int32_t hits;
  std::array<std::array<float, 2>, 2> r;
  double energy;
};

std::vector<particle> sample(int n) {
  std::vector<particle> ps(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const float f = static_cast<float>(i);
    ps[static_cast<std::size_t>(i)] = {
        {f, f + 0.5f, -f}, {1.0f, -2.0f, 0.25f * f}, 1.0f + f, i % 3, {{{f, 1.0f}, {2.0f, -f}}}, 0.0};
  }
  return ps;
}

// The step in plain C++.
void step_host(std::vector<particle>& ps, float dt) {
  for (auto& p : ps) {
    for (int k = 0; k < 3; ++k) p.x[static_cast<std::size_t>(k)] += p.v[static_cast<std::size_t>(k)] * dt;
    const float s = p.r[0][0] + p.r[1][1];
    p.r = {{{p.r[0][0], s}, {p.r[1][0], p.r[1][1]}}};
    double e = 0.0;
    for (float c : p.v) e += static_cast<double>(0.5f * p.m * c * c);
    p.energy = e;
    p.hits = p.hits + 1;
  }
}

auto step_kernel() {
  return qd::kernel("step", {"ps", "dt"}, [](qd::types::ndarray<particle_k, 1> p, qd::f32 dt) {
    qd::range_for(p.shape(0), [&](qd::i32 i) {
      p[i].x = p[i].x + p[i].v * dt;
      auto e = p[i];  // a reference to the element: its members store
      const qd::f32 s = e.r(0, 0) + e.r(1, 1);
      e.r = qd::mat2f(e.r(0, 0), s, e.r(1, 0), e.r(1, 1));
      qd::var<double> energy = 0.0;
      for (int k = 0; k < 3; ++k) energy += qd::cast<double>(0.5f * e.m * e.v[k] * e.v[k]);
      e.energy = energy;
      e.hits = e.hits + 1;
    });
  });
}

void check_same(const std::vector<particle>& got, const std::vector<particle>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].x == want[i].x);
    CHECK(got[i].v == want[i].v);
    CHECK(got[i].m == want[i].m);
    CHECK(got[i].hits == want[i].hits);
    CHECK(got[i].r == want[i].r);
    CHECK(got[i].energy == want[i].energy);
  }
}

}  // namespace

TEST_CASE("members of an array of structs are read and written by name, AoS and SoA alike") {
  for (qd::arch a : arches)
    for (qd::layout l : {qd::layout::aos, qd::layout::soa}) {
      CAPTURE(a);
      CAPTURE(static_cast<int>(l));
      init_arch(a, {.check_out_of_bound = true});
      const int n = 50;
      auto host = sample(n);
      qd::ndarray<particle, 1> ps(n, l);
      ps.from_host(host);
      CHECK(ps.to_host().size() == static_cast<std::size_t>(n));
      check_same(ps.to_host(), host);  // the layouts round-trip
      auto k = step_kernel();
      k(ps, 0.125f);
      k(ps, 0.125f);
      step_host(host, 0.125f);
      step_host(host, 0.125f);
      check_same(ps.to_host(), host);
      qd::reset();
    }
}

TEST_CASE("one compiled kernel serves both layouts; members are parameters named after them") {
  qd_test::init_cpu();
  auto k = step_kernel();
  qd::ndarray<particle, 1> aos(8), soa(8, qd::layout::soa);
  aos.fill(sample(1)[0]);
  soa.fill(sample(1)[0]);
  k(aos, 0.5f);
  const int compiled = k.per_offload_cache_observations().constructs_compiled;
  k(soa, 0.5f);
  CHECK(k.per_offload_cache_observations().constructs_compiled == compiled);  // nothing more compiled
  check_same(soa.to_host(), aos.to_host());
  const std::string ir = k.ir();
  CHECK(ir.find(member_names ? "ps.x: ndarray<f32, 2>" : "ps.0: ndarray<f32, 2>") != std::string::npos);
  CHECK(ir.find(member_names ? "ps.energy: ndarray<f64, 2>" : "ps.5: ndarray<f64, 2>") != std::string::npos);
  qd::reset();
}

namespace {
struct pair_k {
  qd::f32 a;
  qd::f32 b;
};
struct pair_h {
  float a, b;
};
// A snapshot of p[0].<read> before a loop writes q.b: split only if the two never overlap.
template <bool ReadB>
auto snapshot_kernel() {
  return qd::kernel(ReadB ? "same_member" : "other_member",
                    [](qd::types::ndarray<pair_k, 1> p, qd::types::ndarray<pair_k, 1> q) {
                      qd::f32 first = ReadB ? qd::f32(p[0].b) : qd::f32(p[0].a);
                      qd::range_for(q.shape(0), [&](qd::i32 i) { q[i].b = 7.0f; });
                      qd::range_for(q.shape(0), [&](qd::i32 i) { q[i].b = q[i].b + first; });
                    });
}
}  // namespace

TEST_CASE("two members of one AoS array never overlap for the run-time check; one member twice does") {
  qd_test::init_cpu({.per_offload = qd::per_offload_mode::on});
  qd::ndarray<pair_h, 1> p(16);
  p.fill({1.0f, 3.0f});
  auto other = snapshot_kernel<false>();
  other(p, p);  // reads p.a, writes p.b: disjoint lanes of one buffer
  CHECK(other.per_offload_cache_observations().fallback == qd::fallback_reason::none);
  CHECK(other.per_offload_cache_observations().runtime_fallbacks == 0);
  CHECK(p.to_host()[5].b == 8.0f);
  auto same = snapshot_kernel<true>();
  same(p, p);  // reads p.b before writing it: the whole kernel's answer, 7 + 8
  CHECK(same.per_offload_cache_observations().runtime_fallbacks == 1);
  CHECK(p.to_host()[5].b == 15.0f);
  qd::ndarray<pair_h, 1> q(16);
  same(p, q);  // two arrays: the split
  CHECK(same.per_offload_cache_observations().runtime_fallbacks == 1);
  CHECK(q.to_host()[3].b == 22.0f);
  qd::reset();
}

TEST_CASE("qd::ref(p[i].m) is the element: += is atomic in a parallel loop, qd::atomic_add returns the old value") {
  for (qd::arch a : arches) {
    CAPTURE(a);
    init_arch(a);
    struct cell_k {
      qd::i32 count;
      qd::vec2f sum;
    };
    struct cell {
      std::int32_t count;
      std::array<float, 2> sum;
    };
    auto k = qd::kernel("scatter", [](qd::types::ndarray<std::int32_t, 1> idx, qd::types::ndarray<cell_k, 1> cells,
                                      qd::types::ndarray<std::int32_t, 1> old) {
      qd::range_for(idx.shape(0), [&](qd::i32 i) {
        qd::ref(cells[idx[i]].count) += 1;
        qd::atomic_add(qd::ref(cells[idx[i]].sum), qd::vec2f(1.0f, qd::cast<float>(i)));
        old[i] = qd::atomic_add(qd::ref(cells[0].count), 0);
      });
    });
    const int n = 300;
    std::vector<std::int32_t> h(n);
    std::vector<cell> want(4, cell{0, {0.0f, 0.0f}});
    for (int i = 0; i < n; ++i) {
      h[static_cast<std::size_t>(i)] = (i * 5) % 4;
      auto& c = want[static_cast<std::size_t>((i * 5) % 4)];
      c.count += 1;
      c.sum[0] += 1.0f;
      c.sum[1] += static_cast<float>(i);
    }
    qd::ndarray<std::int32_t, 1> idx(n), old(n);
    idx.from_host(h);
    qd::ndarray<cell, 1> cells(4, qd::layout::soa);
    k(idx, cells, old);
    const auto got = cells.to_host();
    for (std::size_t c = 0; c < 4; ++c) {
      CHECK(got[c].count == want[c].count);
      CHECK(got[c].sum == want[c].sum);  // small integers: exact in any order
    }
    qd::reset();
  }
}

TEST_CASE("an array of structs as a member of a struct parameter, and a 2-D array indexed by a vector") {
  qd_test::init_cpu();
  struct node_k {
    qd::f32 h;
    qd::vec2f grad;
  };
  struct node {
    float h;
    std::array<float, 2> grad;
  };
  struct grid_view {
    qd::types::ndarray<node_k, 2> nodes;
    qd::f32 scale;
  };
  struct grid {
    qd::ndarray<node, 2> nodes;
    float scale;
  };
  auto k = qd::kernel("gradient", {"g"}, [](grid_view g) {
    qd::range_for(qd::ndrange(g.nodes.shape(0) - 1, g.nodes.shape(1) - 1), [&](qd::i32 i, qd::i32 j) {
      const qd::f32 h = g.nodes(i, j).h;
      g.nodes[qd::vec2i(i, j)].grad = {(g.nodes(i + 1, j).h - h) * g.scale, (g.nodes(i, j + 1).h - h) * g.scale};
    });
  });
  grid gr{qd::ndarray<node, 2>({3, 4}), 2.0f};
  std::vector<node> h(12);
  for (int i = 0; i < 12; ++i) h[static_cast<std::size_t>(i)] = {static_cast<float>(i * i), {0.0f, 0.0f}};
  gr.nodes.from_host(h);
  k(gr);
  const auto got = gr.nodes.to_host();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      const auto at = [&](int a, int b) { return h[static_cast<std::size_t>(a * 4 + b)].h; };
      CHECK(got[static_cast<std::size_t>(i * 4 + j)].grad ==
            std::array<float, 2>{(at(i + 1, j) - at(i, j)) * 2.0f, (at(i, j + 1) - at(i, j)) * 2.0f});
    }
  CHECK(k.ir().find(member_names ? "g.nodes.grad" : "g.0.1") != std::string::npos);
  qd::reset();
}

TEST_CASE("qd::external_array holds vectors and matrices the caller owns") {
  for (qd::arch a : arches) {
    CAPTURE(a);
    init_arch(a);
    auto k = qd::kernel("external_vec", [](qd::types::ndarray<qd::vec3f, 1> v, qd::types::ndarray<qd::mat2f, 1> m,
                                           qd::types::ndarray<float, 1> out) {
      qd::range_for(v.shape(0), [&](qd::i32 i) {
        out[i] = qd::dot(v[i], v[i]) + qd::determinant(m[i]);
        v[i] = v[i] * 2.0f;
      });
    });
    std::vector<std::array<float, 3>> vs{{1.0f, 2.0f, 3.0f}, {0.5f, -1.0f, 4.0f}};
    std::vector<float> ms{1.0f, 2.0f, 3.0f, 4.0f, 2.0f, 0.0f, 0.0f, 2.0f};  // two 2x2 matrices as scalars
    qd::ndarray<float, 1> out(2);
    k(qd::external_array<qd::vec3f, 1>(vs.data(), {2}), qd::external_array<qd::mat2f, 1>(ms.data(), {2}), out);
    CHECK(out.to_host() == std::vector<float>{14.0f + (4.0f - 6.0f), 17.25f + 4.0f});
    CHECK(vs[1] == std::array<float, 3>{1.0f, -2.0f, 8.0f});
    qd::reset();
  }
}

TEST_CASE("a host struct that does not match the kernel's is named in the message") {
  // (compile errors: tests/compile_fail/struct_array_*.cpp); at run time, an empty array works
  qd_test::init_cpu();
  auto k = step_kernel();
  qd::ndarray<particle, 1> none(0);
  CHECK_NOTHROW(k(none, 1.0f));
  qd::reset();
}
