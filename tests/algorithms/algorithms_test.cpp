// qd::algorithms (scans, reductions, radix sort, select, reduce_by_key) against the C++
// standard library on random, adversarial and edge-case inputs: on the CPU with one and
// two threads, the reference backend, and the GPUs (emulated in the tests' second run).
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <quadrants/algorithms.hpp>

#include "support/arches.hpp"

namespace {

using doctest::Contains;
namespace alg = qd::algorithms;

using namespace qd_algorithm_test;

// The interpreter runs an iteration per node visit: it gets the small sizes only. The
// GPUs (emulated on the CPU in the tests) tile by 1024: one tile and a bit, and nine.
template <class A>
std::vector<std::int64_t> sizes() {
  if (A::arch == qd::arch::reference) return {0, 1, 2, 7, 300, 4097};
  if (A::arch != qd::arch::cpu) return {0, 1, 7, 1025, 9001};
  return {0, 1, 2, 7, 4095, 4096, 4097, 65537, 200003};
}

// The CPU and the reference backend run every element type; the GPUs (emulated on the
// CPU in the tests: every kernel compiled again, and checked by the real NVRTC or hipRTC)
// one type of each kind the device code treats differently, for each algorithm.
template <class A>
constexpr bool every_type = A::arch == qd::arch::cpu || A::arch == qd::arch::reference;

template <class T>
std::vector<T> random_values(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>)
      x = static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(g));
    else
      x = static_cast<T>(g());
  }
  return v;
}

template <class T>
qd::ndarray<T, 1> array_of(const std::vector<T>& v) {
  qd::ndarray<T, 1> a(static_cast<std::int64_t>(v.size()));
  if (!v.empty()) a.from_host(v);
  return a;
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Integers: exactly std's (wrapping through unsigned); floats: within a few units of
// the sum's magnitude of a long double scan.
template <class T, bool Inclusive>
void check_scan(const std::vector<T>& in, const std::vector<T>& got) {
  REQUIRE(got.size() == in.size());
  long double exact = 0, magnitude = 0;
  using U = std::make_unsigned_t<std::conditional_t<std::is_integral_v<T>, T, int>>;
  U wrapped = 0;
  int bad = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (Inclusive)
      exact += in[i], magnitude += std::abs(static_cast<long double>(in[i])),
          wrapped = static_cast<U>(wrapped + static_cast<U>(in[i]));
    if constexpr (std::is_integral_v<T>) {
      if (got[i] != static_cast<T>(wrapped) && ++bad <= 3) CHECK(got[i] == static_cast<T>(wrapped));
    } else {
      const long double tol = (std::is_same_v<T, float> ? 1e-6L : 1e-14L) * (magnitude + 1e-30L);
      if (!(std::abs(static_cast<long double>(got[i]) - exact) <= tol) && ++bad <= 3) {
        CAPTURE(i);
        CHECK(static_cast<double>(got[i]) == doctest::Approx(static_cast<double>(exact)));
      }
    }
    if (!Inclusive)
      exact += in[i], magnitude += std::abs(static_cast<long double>(in[i])),
          wrapped = static_cast<U>(wrapped + static_cast<U>(in[i]));
  }
  CHECK(bad == 0);
}

template <class A, class T>
void scans_of_type() {
  std::uint64_t seed = 1;
  for (std::int64_t n : sizes<A>()) {
    CAPTURE(n);
    std::vector<std::vector<T>> inputs{random_values<T>(n, seed++)};
    if constexpr (std::is_integral_v<T>) {
      inputs.push_back(std::vector<T>(static_cast<std::size_t>(n), std::numeric_limits<T>::max()));  // wraps
    } else {  // huge and tiny values side by side
      std::vector<T> v = random_values<T>(n, seed++);
      for (std::size_t i = 0; i < v.size(); i += 3) v[i] *= static_cast<T>(1e6);
      inputs.push_back(v);
    }
    for (const auto& in : inputs) {
      auto a = array_of(in);
      qd::ndarray<T, 1> ex(n), inc(n);
      alg::exclusive_scan(a, ex);
      alg::inclusive_scan(a, inc);
      check_scan<T, false>(in, ex.to_host());
      check_scan<T, true>(in, inc.to_host());
      alg::inclusive_scan(a, a);  // in place
      CHECK(a.to_host() == inc.to_host());
    }
  }
}

template <class A, class T>
void reductions_of_type() {
  std::uint64_t seed = 11;
  for (std::int64_t n : sizes<A>()) {
    CAPTURE(n);
    const std::vector<T> in = random_values<T>(n, seed++);
    auto a = array_of(in);
    const T sum = alg::reduce(a);
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      U want = 0;
      for (T x : in) want = static_cast<U>(want + static_cast<U>(x));
      CHECK(sum == static_cast<T>(want));
    } else {
      long double exact = 0, magnitude = 0;
      for (T x : in) exact += x, magnitude += std::abs(static_cast<long double>(x));
      CHECK(std::abs(static_cast<long double>(sum) - exact) <=
            (std::is_same_v<T, float> ? 1e-6L : 1e-14L) * (magnitude + 1e-30L));
    }
    if (n == 0) {
      CHECK_THROWS_WITH_AS(alg::reduce_min(a), Contains("empty array"), qd::user_error);
      CHECK_THROWS_WITH_AS(alg::reduce_max(a), Contains("empty array"), qd::user_error);
      continue;
    }
    CHECK(same_bits(alg::reduce_min(a), *std::min_element(in.begin(), in.end())));
    CHECK(same_bits(alg::reduce_max(a), *std::max_element(in.begin(), in.end())));
  }
}

}  // namespace

TEST_CASE_TEMPLATE("exclusive and inclusive scans agree with std, in place too", A, QD_ALGORITHM_ARCHES) {
  if (!start<A>()) return;
  scans_of_type<A, std::int64_t>();
  scans_of_type<A, float>();
  if constexpr (!every_type<A>) return;
  scans_of_type<A, std::int32_t>();
  scans_of_type<A, std::uint32_t>();
  scans_of_type<A, double>();
}

TEST_CASE_TEMPLATE("reduce, reduce_min and reduce_max agree with std; empty arrays", A, QD_ALGORITHM_ARCHES) {
  if (!start<A>()) return;
  reductions_of_type<A, std::uint32_t>();
  reductions_of_type<A, double>();
  if constexpr (!every_type<A>) return;
  reductions_of_type<A, std::int32_t>();
  reductions_of_type<A, std::int64_t>();
  reductions_of_type<A, float>();
}

TEST_CASE("reduce_min and reduce_max skip NaNs") {
  start<on_cpu1>();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = array_of<float>({nan, 3.0f, -2.0f, nan, 7.0f});
  CHECK(alg::reduce_min(a) == -2.0f);
  CHECK(alg::reduce_max(a) == 7.0f);
  auto only = array_of<float>({nan, nan});
  CHECK(alg::reduce_min(only) == std::numeric_limits<float>::infinity());
}

TEST_CASE("float scans and sums give the same bits on 1 and 2 CPU threads and the reference backend") {
  const std::vector<float> in = random_values<float>(150001, 99);
  std::vector<std::vector<float>> scans;
  std::vector<float> sums;
  for (int which = 0; which < 3; ++which) {
    qd::init({.arch = which == 2 ? qd::arch::reference : qd::arch::cpu, .cpu_max_num_threads = which == 1 ? 2 : 1});
    auto a = array_of(in);
    qd::ndarray<float, 1> out(static_cast<std::int64_t>(in.size()));
    alg::exclusive_scan(a, out);
    scans.push_back(out.to_host());
    sums.push_back(alg::reduce(a));
  }
  for (int which = 1; which < 3; ++which) {
    CAPTURE(which);
    CHECK(std::memcmp(scans[0].data(), scans[static_cast<std::size_t>(which)].data(), in.size() * sizeof(float)) == 0);
    CHECK(same_bits(sums[0], sums[static_cast<std::size_t>(which)]));
  }
}

TEST_CASE("scans and reductions: mismatched lengths are a qd::user_error") {
  start<on_cpu1>();
  qd::ndarray<float, 1> a(10), b(11);
  CHECK_THROWS_WITH_AS(alg::exclusive_scan(a, b), Contains("'in' has 10 elements and 'out' 11"), qd::user_error);
  CHECK_THROWS_WITH_AS(alg::inclusive_scan(a, b), Contains("need the same length"), qd::user_error);
}

// ---- select and reduce_by_key -------------------------------------------------------

namespace {

template <class A, class T, class F>
void select_of_types() {
  std::uint64_t seed = 21;
  for (std::int64_t n : sizes<A>()) {
    CAPTURE(n);
    const std::vector<T> in = random_values<T>(n, seed++);
    for (int density : {0, 1, 2, 10}) {  // none, all, every other, sparse
      std::vector<F> flags(static_cast<std::size_t>(n));
      std::mt19937 g(static_cast<unsigned>(seed + static_cast<std::uint64_t>(density)));
      for (auto& f : flags)
        f = static_cast<F>(density == 0 ? 0 : density == 1 ? 3 : (g() % static_cast<unsigned>(density)) == 0);
      std::vector<T> want;
      for (std::size_t i = 0; i < in.size(); ++i)
        if (flags[i] != 0) want.push_back(in[i]);
      auto a = array_of(in);
      auto f = array_of(flags);
      qd::ndarray<T, 1> out(std::max<std::int64_t>(n, 1));
      const std::int64_t count = alg::select(a, f, out);
      REQUIRE(count == static_cast<std::int64_t>(want.size()));
      auto got = out.to_host();
      got.resize(want.size());
      CHECK(got == want);
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("select keeps the flagged elements in order, as std::copy_if", A, QD_ALGORITHM_ARCHES) {
  if (!start<A>()) return;
  select_of_types<A, float, std::int32_t>();
  if constexpr (every_type<A>) select_of_types<A, std::int64_t, std::uint8_t>();
}

TEST_CASE("select: bad arguments are qd::user_errors, before anything is written") {
  start<on_cpu1>();
  auto a = array_of<float>({1, 2, 3, 4});
  auto flags = array_of<std::int32_t>({1, 1, 0, 1});
  qd::ndarray<float, 1> small(2);
  small.fill(-1.0f);
  CHECK_THROWS_WITH_AS(alg::select(a, flags, small), Contains("'out' has 2 elements but the result has 3"),
                       qd::user_error);
  CHECK(small.to_host() == std::vector<float>{-1.0f, -1.0f});
  auto short_flags = array_of<std::int32_t>({1, 0});
  CHECK_THROWS_WITH_AS(alg::select(a, short_flags, small), Contains("'flags' 2"), qd::user_error);
  CHECK_THROWS_WITH_AS(alg::select(a, flags, a), Contains("in place"), qd::user_error);
  qd::ndarray<float, 1> empty(0), out(1);
  qd::ndarray<std::int32_t, 1> no_flags(0);
  CHECK(alg::select(empty, no_flags, out) == 0);
}

namespace {

template <class A, class K, class V>
void reduce_by_key_of_types() {
  std::uint64_t seed = 31;
  for (std::int64_t n : sizes<A>()) {
    CAPTURE(n);
    for (int run_length : {1, 3, 1000, 1000000}) {
      std::mt19937_64 g(seed++);
      std::vector<K> keys(static_cast<std::size_t>(n));
      K key = 0;
      for (auto& k : keys) {
        if (g() % static_cast<std::uint64_t>(run_length) == 0) key = static_cast<K>(key + 1 + static_cast<K>(g() % 3));
        k = key;
      }
      const std::vector<V> values = random_values<V>(n, seed++);
      std::vector<K> want_keys;
      std::vector<long double> want_sums;
      std::vector<std::uint64_t> wrapped;  // integer sums wrap, as in C++ on unsigned
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (i == 0 || keys[i] != keys[i - 1])
          want_keys.push_back(keys[i]), want_sums.push_back(0), wrapped.push_back(0);
        want_sums.back() += values[i];
        if constexpr (std::is_integral_v<V>) wrapped.back() += static_cast<std::uint64_t>(values[i]);
      }
      if constexpr (std::is_integral_v<V>)
        for (std::size_t r = 0; r < wrapped.size(); ++r)
          want_sums[r] = static_cast<V>(static_cast<std::make_unsigned_t<V>>(wrapped[r]));
      auto k = array_of(keys);
      auto v = array_of(values);
      qd::ndarray<K, 1> ok(std::max<std::int64_t>(n, 1));
      qd::ndarray<V, 1> ov(std::max<std::int64_t>(n, 1));
      const std::int64_t runs = alg::reduce_by_key(k, v, ok, ov);
      REQUIRE(runs == static_cast<std::int64_t>(want_keys.size()));
      auto got_keys = ok.to_host();
      auto got_sums = ov.to_host();
      got_keys.resize(want_keys.size());
      CHECK(got_keys == want_keys);
      int bad = 0;
      for (std::size_t r = 0; r < want_sums.size(); ++r) {
        const long double tol = std::is_same_v<V, float> ? 2e-6L * (1 + std::abs(want_sums[r])) : 0;
        if (!(std::abs(static_cast<long double>(got_sums[r]) - want_sums[r]) <= tol) && ++bad <= 3) {
          CAPTURE(r);
          CHECK(static_cast<double>(got_sums[r]) == doctest::Approx(static_cast<double>(want_sums[r])));
        }
      }
      CHECK(bad == 0);
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("reduce_by_key sums runs of equal keys, as a plain loop", A, QD_ALGORITHM_ARCHES) {
  if (!start<A>()) return;
  reduce_by_key_of_types<A, std::int32_t, float>();
  if constexpr (every_type<A>) reduce_by_key_of_types<A, std::int64_t, std::int32_t>();
}

TEST_CASE("reduce_by_key: NaN keys are runs of their own, -0.0 joins +0.0; bad arguments") {
  start<on_cpu1>();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto keys = array_of<float>({nan, nan, -0.0f, 0.0f, 1.0f});
  auto values = array_of<float>({1, 2, 3, 4, 5});
  qd::ndarray<float, 1> ok(5), ov(5);
  CHECK(alg::reduce_by_key(keys, values, ok, ov) == 4);
  const auto sums = ov.to_host();
  CHECK(sums[0] == 1.0f);
  CHECK(sums[1] == 2.0f);
  CHECK(sums[2] == 7.0f);
  CHECK(std::signbit(ok.to_host()[2]));  // the run keeps its first key
  qd::ndarray<float, 1> small(3);
  CHECK_THROWS_WITH_AS(alg::reduce_by_key(keys, values, small, ov),
                       Contains("'out_keys' has 3 elements but the result has 4"), qd::user_error);
  qd::ndarray<float, 1> short_values(4);
  CHECK_THROWS_WITH_AS(alg::reduce_by_key(keys, short_values, ok, ov), Contains("need the same length"),
                       qd::user_error);
  qd::ndarray<float, 1> none(0);
  CHECK(alg::reduce_by_key(none, none, ok, ov) == 0);
}

// ---- sort ---------------------------------------------------------------------------

namespace {

// The order the sort promises: by value; floats with -0.0 before +0.0 and NaNs last.
template <class K>
bool key_less(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(a) || std::isnan(b)) return !std::isnan(a) && std::isnan(b);
    if (a == b) return std::signbit(a) && !std::signbit(b);
  }
  return a < b;
}

template <class K>
std::vector<std::vector<K>> sort_inputs(std::int64_t n, std::uint64_t seed) {
  std::vector<std::vector<K>> out;
  out.push_back(random_values<K>(n, seed));
  std::vector<K> few = random_values<K>(n, seed + 1);
  for (auto& k : few) k = static_cast<K>(static_cast<std::int64_t>(k * (std::is_floating_point_v<K> ? 4 : 1)) % 4);
  out.push_back(few);  // many duplicates
  std::vector<K> sorted = random_values<K>(n, seed + 2);
  std::sort(sorted.begin(), sorted.end(), key_less<K>);
  out.push_back(sorted);
  std::reverse(sorted.begin(), sorted.end());
  out.push_back(sorted);
  std::vector<K> edges(static_cast<std::size_t>(n));
  std::vector<K> specials{std::numeric_limits<K>::lowest(), std::numeric_limits<K>::max(), K(0), K(1),
                          static_cast<K>(-1)};
  if constexpr (std::is_floating_point_v<K>) {
    const K nan = std::numeric_limits<K>::quiet_NaN();
    specials.insert(specials.end(),
                    {-K(0), std::numeric_limits<K>::infinity(), -std::numeric_limits<K>::infinity(), nan, -nan,
                     std::numeric_limits<K>::denorm_min(), -std::numeric_limits<K>::denorm_min()});
    K payload;  // a NaN with another payload
    std::uint64_t bits = sizeof(K) == 4 ? 0x7fa00001u : 0x7ff4000000000001ull;
    std::memcpy(&payload, &bits, sizeof(K));
    specials.push_back(payload);
  }
  std::mt19937_64 g(seed + 3);
  for (auto& k : edges) k = specials[g() % specials.size()];
  out.push_back(edges);
  return out;
}

template <class A, class K>
void sorts_of_type() {
  std::uint64_t seed = 41;
  for (std::int64_t n : sizes<A>()) {
    CAPTURE(n);
    for (const auto& in : sort_inputs<K>(n, seed += 10)) {
      std::vector<std::pair<K, std::int32_t>> want;
      for (std::size_t i = 0; i < in.size(); ++i) want.emplace_back(in[i], static_cast<std::int32_t>(i));
      std::stable_sort(want.begin(), want.end(),
                       [](const auto& a, const auto& b) { return key_less(a.first, b.first); });
      auto keys = array_of(in);
      alg::sort(keys);
      const auto sorted = keys.to_host();
      int bad = 0;
      for (std::size_t i = 0; i < in.size(); ++i)
        if (!same_bits(sorted[i], want[i].first) && ++bad <= 3) {
          CAPTURE(i);
          CHECK(same_bits(sorted[i], want[i].first));
        }
      auto keys2 = array_of(in);
      std::vector<std::int32_t> index(in.size());
      std::iota(index.begin(), index.end(), 0);
      auto values = array_of(index);
      alg::sort_by_key(keys2, values);
      const auto sorted2 = keys2.to_host();
      const auto moved = values.to_host();
      for (std::size_t i = 0; i < in.size(); ++i)
        if ((!same_bits(sorted2[i], want[i].first) || moved[i] != want[i].second) && ++bad <= 3) {
          CAPTURE(i);
          CHECK(moved[i] == want[i].second);  // stable: equal keys keep their order
        }
      CHECK(bad == 0);
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("sort and sort_by_key agree with std::stable_sort for every key type", A, QD_ALGORITHM_ARCHES) {
  if (!start<A>()) return;
  sorts_of_type<A, std::int64_t>();
  sorts_of_type<A, float>();
  if constexpr (!every_type<A>) return;
  sorts_of_type<A, std::int32_t>();
  sorts_of_type<A, std::uint32_t>();
  sorts_of_type<A, std::uint64_t>();
  sorts_of_type<A, double>();
}

TEST_CASE("sort_by_key: values of another type move with their keys; bad arguments") {
  start<on_cpu2>();
  auto keys = array_of<double>({3.5, -1.0, 3.5, 0.0});
  auto values = array_of<float>({1, 2, 3, 4});
  alg::sort_by_key(keys, values);
  CHECK(keys.to_host() == std::vector<double>{-1.0, 0.0, 3.5, 3.5});
  CHECK(values.to_host() == std::vector<float>{2, 4, 1, 3});
  auto short_values = array_of<float>({1, 2});
  CHECK_THROWS_WITH_AS(alg::sort_by_key(keys, short_values), Contains("'keys' has 4 elements and 'values' 2"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(alg::sort_by_key(keys, keys), Contains("one array"), qd::user_error);
  qd::ndarray<float, 1> empty(0);
  alg::sort(empty);  // nothing to do
}

// ---- inside a graph kernel ----------------------------------------------------------

TEST_CASE_TEMPLATE("a scan and a reduction as constructs of a graph kernel, repeated by do_while", A, on_cpu2,
                   on_reference, on_cuda, on_amdgpu) {
  if (!start<A>()) return;
  auto k = qd::kernel("scan_in_graph", {"x", "out", "scratch", "total", "again"}, qd::graph::on,
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out,
                         qd::types::ndarray<std::int32_t, 1> scratch, qd::types::ndarray<std::int32_t, 0> total,
                         qd::types::ndarray<std::int32_t, 0> again) {
                        qd::graph::do_while(again, [&] {
                          alg::exclusive_scan(x, out, scratch);
                          const qd::i32 sum = alg::reduce(out);
                          qd::range_for(1, [&](qd::i32) {
                            total() = sum;
                            again() = 0;
                          });
                        });
                      });
  const std::int64_t n = 10007;
  std::vector<std::int32_t> in(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::int32_t>(i % 13) - 6;
  auto x = array_of(in);
  qd::ndarray<std::int32_t, 1> out(n), scratch(7);
  qd::ndarray<std::int32_t, 0> total, again;
  k(x, out, scratch, total, again);
  std::vector<std::int32_t> want(in.size());
  std::exclusive_scan(in.begin(), in.end(), want.begin(), 0);
  CHECK(out.to_host() == want);
  CHECK(total.to_host()[0] == std::accumulate(want.begin(), want.end(), 0));
}
