// Run-time errors (SPEC §9): each is a qd::user_error whose message names the
// kernel, the parameter or construct, and what to do; none crashes.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/runtime_test_support.hpp"

using doctest::Contains;
using qd_test::init_cpu;

#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
#define __SANITIZE_ADDRESS__ 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
// An 8 PiB request must fail as it does without ASan (null, then a qd::error), not abort.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif

TEST_CASE("launching or compiling a kernel before qd::init or after qd::reset is an error naming the kernel") {
  auto k = qd::kernel("lonely", {"n"}, [](qd::i32 n) { qd::print("n is", n); });

  SUBCASE("before qd::init") {
    qd::reset();  // no program, as before the first qd::init
    REQUIRE_FALSE(qd::is_initialized());
    CHECK_THROWS_WITH_AS(k(3), Contains("kernel 'lonely'"), qd::user_error);
    CHECK_THROWS_WITH_AS(k(3), Contains("call qd::init()"), qd::user_error);
    CHECK_THROWS_WITH_AS(k.compile(), Contains("kernel 'lonely'"), qd::user_error);
    CHECK_THROWS_WITH_AS((qd::ndarray<float, 1>(4)), Contains("creating a qd::ndarray"), qd::user_error);
    CHECK_THROWS_WITH_AS(qd::current_settings(), Contains("not initialized"), qd::user_error);
  }
  SUBCASE("after qd::reset") {
    init_cpu();
    std::string printed = qd_test::capture_stdout([&] { k(3); });
    CHECK(printed == "n is 3\n");
    qd::reset();
    CHECK_FALSE(qd::is_initialized());
    CHECK_THROWS_WITH_AS(k(3), Contains("kernel 'lonely': Quadrants is not initialized"), qd::user_error);
    init_cpu();  // a new program compiles the kernel again and runs it
    printed = qd_test::capture_stdout([&] { k(4); });
    CHECK(printed == "n is 4\n");
  }
}

TEST_CASE("a qd::ndarray created before qd::reset cannot be used in the next program") {
  init_cpu();
  auto k = qd::kernel("stale_array_user", {"fresh", "old"},
                      [](qd::types::ndarray<float, 1> fresh, qd::types::ndarray<float, 1> old) {
                        qd::range_for(fresh.shape(0), [&](qd::i32 i) { fresh[i] = old[i]; });
                      });
  qd::ndarray<float, 1> old(4);
  old.fill(1.0f);
  init_cpu();  // a re-init ends the program the array belongs to
  qd::ndarray<float, 1> fresh(4);
  CHECK_THROWS_WITH_AS(k(fresh, old), Contains("kernel 'stale_array_user', parameter 'old' (#1"), qd::user_error);
  CHECK_THROWS_WITH_AS(k(fresh, old), Contains("created before qd::reset()"), qd::user_error);
  CHECK_THROWS_WITH_AS(old.to_host(), Contains("qd::ndarray::to_host"), qd::user_error);
  CHECK_THROWS_WITH_AS(old.from_host(std::vector<float>(4, 0.0f)), Contains("created before qd::reset()"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(old.fill(2.0f), Contains("qd::ndarray::fill"), qd::user_error);
  qd::reset();
  CHECK_THROWS_WITH_AS(fresh.to_host(), Contains("created before qd::reset()"), qd::user_error);
}

TEST_CASE("from_host with the wrong number of elements and impossible shapes are errors") {
  init_cpu();
  qd::ndarray<float, 2> m({3, 4});
  CHECK_THROWS_WITH_AS(m.from_host(std::vector<float>(11, 0.0f)), Contains("has 12 elements but 11 were given"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(m.from_host(std::vector<float>(13, 0.0f)), Contains("qd::ndarray::from_host"), qd::user_error);
  CHECK(m.to_host() == std::vector<float>(12, 0.0f));  // nothing was written
  CHECK_THROWS_WITH_AS((qd::ndarray<float, 2>({3, -1})), Contains("extent -1 of dimension 1"), qd::user_error);
  CHECK(m.shape(1) == 4);
  CHECK_THROWS_WITH_AS((void)m.shape(2), Contains("qd::ndarray::shape(2): the array has 2 dimensions"), qd::user_error);
  CHECK_THROWS_WITH_AS((void)m.shape(-1), Contains("pass a dimension in 0..1"), qd::user_error);
  qd::ndarray<float, 0> s;
  CHECK_THROWS_WITH_AS((void)s.shape(0), Contains("a 0-dimensional array has no extents"), qd::user_error);
  float raw[6] = {};
  qd::external_array<float, 1> ext(raw, {6});
  CHECK(ext.shape(0) == 6);
  CHECK_THROWS_WITH_AS((void)ext.shape(1), Contains("qd::external_array::shape(1)"), qd::user_error);
}

TEST_CASE("array sizes that overflow are a qd::user_error; an allocation the system refuses is a qd::error") {
  for (qd::arch a : {qd::arch::cpu, qd::arch::reference}) {
    CAPTURE(qd::name(a));
    qd::init({.arch = a});
    // 2^62 floats = 2^64 bytes: the byte size once wrapped to 0 and kernels wrote past the buffer.
    CHECK_THROWS_WITH_AS((qd::ndarray<float, 3>({1 << 21, 1 << 21, 1 << 20})),
                         Contains("qd::ndarray({2097152, 2097152, 1048576}): the size in bytes"), qd::user_error);
    // The element count itself past 2^63 (it overflowed std::int64_t).
    CHECK_THROWS_WITH_AS((qd::ndarray<std::uint8_t, 4>({2147483647, 2147483647, 2147483647, 2147483647})),
                         Contains("make the array smaller"), qd::user_error);
    CHECK_THROWS_AS((qd::ndarray<double, 2>({1 << 30, 1 << 30}, qd::needs_grad)), qd::user_error);  // 2^63 bytes
    // 2^53 bytes (8 PiB) is a possible size that no allocation gives: a qd::error, not std::bad_alloc.
    try {
      qd::ndarray<float, 2> huge({1 << 30, 1 << 21});
      FAIL("an 8 PiB array was allocated");
    } catch (const qd::driver_error& e) {
      CHECK(std::string(e.what()).find("cannot allocate 9007199254740992 bytes") != std::string::npos);
    }
    // Sizes just inside the limits and empty arrays still work.
    qd::ndarray<float, 4> empty({0, 2147483647, 2147483647, 2147483647});
    CHECK(empty.size() == 0);
    CHECK(empty.to_host().empty());
    qd::ndarray<std::int32_t, 2> fine({3, 5});
    CHECK(fine.size() == 15);
  }
  qd_test::init_cpu();
}

TEST_CASE("gradients: a needs_grad parameter rejects an array without one; .grad() on such an array throws") {
  init_cpu();
  auto k = qd::kernel("wants_grad", {"x", "y"},
                      [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1, qd::needs_grad> y) {
                        qd::range_for(x.shape(0), [&](qd::i32 i) { y.grad()[i] = x[i]; });
                      });
  qd::ndarray<float, 1> x(4), plain(4), with_grad(4, qd::needs_grad);
  CHECK_THROWS_WITH_AS(k(x, plain), Contains("kernel 'wants_grad', parameter 'y' (#1"), qd::user_error);
  CHECK_THROWS_WITH_AS(k(x, plain), Contains("construct the qd::ndarray with qd::needs_grad"), qd::user_error);
  CHECK_FALSE(plain.has_grad());
  CHECK_THROWS_WITH_AS(plain.grad(), Contains("no gradient buffer"), qd::user_error);
  x.fill(2.0f);
  k(x, with_grad);
  CHECK(with_grad.grad().to_host() == std::vector<float>(4, 2.0f));
}

TEST_CASE("out-of-bounds indexing under check_out_of_bound names the kernel, the parameter and the index") {
  init_cpu({.check_out_of_bound = true});
  auto k = qd::kernel("overrun", {"x", "m", "n"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 2> m, qd::i32 n) {
                        qd::range_for(n, [&](qd::i32 i) { x[i] = i + 1; });
                        qd::range_for(2, [&](qd::i32 i) { m(i, n) = 5; });
                        qd::range_for(n + 3, [&](qd::i32 i) {
                          x.at(i, qd::boundary::clamp) += 0;  // clamped: never out of bounds
                        });
                      });
  qd::ndarray<std::int32_t, 1> x(10);
  qd::ndarray<std::int32_t, 2> m({2, 3});
  k(x, m, 2);  // in bounds: no error
  CHECK(x.to_host()[1] == 2);

  CHECK_THROWS_WITH_AS(k(x, m, 11), Contains("kernel 'overrun', parameter 'x' (#0"), qd::user_error);
  CHECK_THROWS_WITH_AS(k(x, m, 11), Contains("index 10 is out of range for dimension 0 (extent 10)"), qd::user_error);
  // The accesses in range were still made; the one out of range was skipped.
  CHECK(x.to_host() == std::vector<std::int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});

  // Dimension 1 of the 2-d array: the first loop stays in range with n = 3.
  CHECK_THROWS_WITH_AS(k(x, m, 3), Contains("kernel 'overrun', parameter 'm' (#1"), qd::user_error);
  CHECK_THROWS_WITH_AS(k(x, m, 3), Contains("index 3 is out of range for dimension 1 (extent 3)"), qd::user_error);
  CHECK(m.to_host() == std::vector<std::int32_t>{0, 0, 5, 0, 0, 5});  // only the first, in-range launch wrote

  // Negative indices too; the kernel is usable again afterwards.
  auto neg = qd::kernel("underrun", {"x"}, [](qd::types::ndarray<std::int32_t, 1> x) { x[x.shape(0) - 11] = 1; });
  CHECK_THROWS_WITH_AS(neg(x), Contains("kernel 'underrun', parameter 'x' (#0"), qd::user_error);
  CHECK_THROWS_WITH_AS(neg(x), Contains("index -1 is out of range"), qd::user_error);
  k(x, m, 2);
}

TEST_CASE("misuse found while tracing is a qd::user_error naming the kernel") {
  init_cpu();
  qd::ndarray<float, 1> x(4);
  qd::ndarray<float, 0> s;

  SUBCASE("shape(d) with d out of range names the parameter") {
    auto k = qd::kernel("bad_shape", {"x"}, [](qd::types::ndarray<float, 1> x) {
      qd::range_for(x.shape(1), [&](qd::i32 i) { x[i] = 0.0f; });
    });
    CHECK_THROWS_WITH_AS(k(x), Contains("kernel 'bad_shape': shape(1) of parameter 'x' (#0"), qd::user_error);
    CHECK_THROWS_WITH_AS(k(x), Contains("has 1 dimension"), qd::user_error);  // the same error again, no crash
    auto k0 =
        qd::kernel("bad_shape_0d", {"s"}, [](qd::types::ndarray<float, 0> s) { s() = qd::cast<float>(s.shape(0)); });
    CHECK_THROWS_WITH_AS(k0(s), Contains("kernel 'bad_shape_0d': shape(0) of parameter 's'"), qd::user_error);
  }
  SUBCASE(".else_ not directly after its if_") {
    auto later = qd::kernel("late_else", {"x"}, [](qd::types::ndarray<float, 1> x) {
      auto branch = qd::if_(x[0] > 0, [&] { x[1] = 1.0f; });
      x[2] = 2.0f;
      branch.else_([&] { x[1] = -1.0f; });
    });
    CHECK_THROWS_WITH_AS(later(x), Contains("kernel 'late_else': .else_ must follow its qd::if_ directly"),
                         qd::user_error);
    auto twice = qd::kernel("double_else", {"x"}, [](qd::types::ndarray<float, 1> x) {
      auto branch = qd::if_(x[0] > 0, [&] { x[1] = 1.0f; });
      branch.else_([&] { x[1] = -1.0f; });
      branch.else_([&] { x[1] = -2.0f; });
    });
    CHECK_THROWS_WITH_AS(twice(x), Contains("kernel 'double_else': .else_ must follow"), qd::user_error);
    auto nested = qd::kernel("nested_else", {"x"}, [](qd::types::ndarray<float, 1> x) {
      auto branch = qd::if_(x[0] > 0, [&] { x[1] = 1.0f; });
      qd::if_(x[3] > 0, [&] { branch.else_([&] { x[1] = -1.0f; }); });
    });
    CHECK_THROWS_WITH_AS(nested(x), Contains("kernel 'nested_else': .else_ must follow"), qd::user_error);
  }
  SUBCASE("a non-boolean loop condition (qd::if_ rejects one at compile time)") {
    auto k = qd::kernel("int_condition", {"x"}, [](qd::types::ndarray<float, 1> x) {
      qd::var<std::int32_t> n = 3;
      qd::while_([&] { return n; }, [&] { n -= 1; });
      x[0] = qd::cast<float>(n);
    });
    CHECK_THROWS_WITH_AS(k(x), Contains("kernel 'int_condition': qd::while_ condition must return a boolean, got i32"),
                         qd::user_error);
  }
  SUBCASE("a compound update other than += and -= of a top-level var inside a parallel loop") {
    auto mul = qd::kernel("racy_product", {"x"}, [](qd::types::ndarray<float, 1> x) {
      qd::var<float> p = 1.0f;
      qd::range_for(x.shape(0), [&](qd::i32 i) { p *= x[i]; });
      x[0] = p;
    });
    CHECK_THROWS_WITH_AS(mul(x), Contains("kernel 'racy_product': '*=' on a top-level qd::var inside a parallel"),
                         qd::user_error);
    auto div = qd::kernel("racy_quotient", {"x"}, [](qd::types::ndarray<float, 1> x) {
      qd::var<float> p = 1.0f;
      qd::range_for(x.shape(0), [&](qd::i32 i) { p /= x[i]; });
      x[0] = p;
    });
    CHECK_THROWS_WITH_AS(div(x), Contains("'/='"), qd::user_error);
    auto bits = qd::kernel("racy_bits", {"x"}, [](qd::types::ndarray<float, 1> x) {
      qd::var<std::int32_t> b = 0;
      qd::range_for(x.shape(0), [&](qd::i32 i) { qd::if_(x[i] > 0, [&] { b |= i; }); });  // nested: still racy
      x[0] = qd::cast<float>(b);
    });
    CHECK_THROWS_WITH_AS(bits(x), Contains("kernel 'racy_bits': '|='"), qd::user_error);
  }
  SUBCASE("rebinding a traced handle inside a nested block") {
    auto k = qd::kernel("rebind", {"x"}, [](qd::types::ndarray<float, 1> x) {
      qd::f32 v = x[0];
      qd::if_(v > 0, [&] { v = v * 2; });
      x[1] = v;
    });
    CHECK_THROWS_WITH_AS(k(x), Contains("kernel 'rebind'"), qd::user_error);
    CHECK_THROWS_WITH_AS(k(x), Contains("qd::var<T>"), qd::user_error);
  }
  SUBCASE("parameter names that do not match the parameters") {
    auto k = qd::kernel("misnamed", {"only_one"}, [](qd::types::ndarray<float, 1> x, qd::f32 a) { x[0] = a; });
    CHECK_THROWS_WITH_AS(k(x, 1.0f), Contains("kernel 'misnamed': 1 parameter names given for 2 parameters"),
                         qd::user_error);
  }
  SUBCASE("an exception from the kernel body propagates and leaves no trace active") {
    auto k = qd::kernel("throws", {"x"}, [](qd::types::ndarray<float, 1> x) {
      x[0] = 1.0f;
      throw std::runtime_error("user code failed while tracing");
    });
    CHECK_THROWS_WITH_AS(k(x), "user code failed while tracing", std::runtime_error);
    CHECK_THROWS_WITH_AS(qd::var<float>(1.0f), Contains("outside a kernel body"), qd::user_error);
  }
}

TEST_CASE("qd::reset, qd::init and kernel launches inside a kernel lambda are errors at trace time") {
  init_cpu();
  qd::ndarray<float, 1> x(4);
  auto inner = qd::kernel("inner", {"x"}, [](qd::types::ndarray<float, 1> x) { x[0] = 1.0f; });
  auto resets = qd::kernel("resets", {"x"}, [](qd::types::ndarray<float, 1> x) {
    x[0] = 1.0f;
    qd::reset();
  });
  CHECK_THROWS_WITH_AS(resets(x), Contains("qd::reset() called while tracing kernel 'resets'"), qd::user_error);
  auto inits = qd::kernel("inits", {"x"}, [](qd::types::ndarray<float, 1> x) {
    x[0] = 1.0f;
    qd::init({.arch = qd::arch::cpu});
  });
  CHECK_THROWS_WITH_AS(inits(x), Contains("qd::init called while tracing kernel 'inits'"), qd::user_error);
  auto launches = qd::kernel("launches", {"x"}, [&inner, &x](qd::types::ndarray<float, 1> y) {
    y[0] = 2.0f;
    inner(x);
  });
  CHECK_THROWS_WITH_AS(launches(x), Contains("kernel 'inner' launched while tracing kernel 'launches'"),
                       qd::user_error);
  auto compiles = qd::kernel("compiles", {"x"}, [&inner](qd::types::ndarray<float, 1> y) {
    y[0] = 2.0f;
    inner.compile();
  });
  CHECK_THROWS_WITH_AS(compiles(x), Contains("kernel 'inner' compiled while tracing kernel 'compiles'"),
                       qd::user_error);
  // The program survived all of it.
  inner(x);
  CHECK(x.to_host()[0] == 1.0f);
}

TEST_CASE("DSL operations outside a kernel body are errors") {
  init_cpu();
  CHECK_THROWS_WITH_AS(qd::var<std::int32_t>(0), Contains("Quadrants DSL operation used outside a kernel body"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(qd::range_for(3, [](qd::i32) {}), Contains("outside a kernel body"), qd::user_error);
  CHECK_THROWS_WITH_AS(qd::print("hello"), Contains("outside a kernel body"), qd::user_error);
  CHECK_THROWS_WITH_AS(qd::random<float>(), Contains("outside a kernel body"), qd::user_error);
  CHECK_THROWS_WITH_AS(qd::i32(5), Contains("outside a kernel body"), qd::user_error);
}

TEST_CASE("invalid QD_* environment variables make qd::init fail, naming the variable") {
  qd_test::init_cpu();
  SUBCASE("QD_ARCH") {
    qd_test::scoped_env env("QD_ARCH", "gpu-please");
    CHECK_THROWS_WITH_AS(qd::init(), Contains("QD_ARCH='gpu-please' is not valid"), qd::user_error);
    CHECK_THROWS_WITH_AS(qd::init(), Contains("cpu, cuda, amdgpu, metal, vulkan"), qd::user_error);
    CHECK_FALSE(qd::is_initialized());  // the failed init did not leave a half-made program
    // An explicit field wins over the variable, which is then not parsed.
    qd_test::log_capture logs;
    qd::init({.arch = qd::arch::cpu, .log_level = qd::log_level::info});
    CHECK(qd::is_initialized());
    bool mentioned = false;
    for (const auto& line : logs.at(qd::log_level::info))
      mentioned |= line.find("overrides QD_ARCH") != std::string::npos;
    CHECK(mentioned);
  }
  SUBCASE("QD_LOG_LEVEL") {
    qd_test::scoped_env env("QD_LOG_LEVEL", "chatty");
    CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::cpu}), Contains("QD_LOG_LEVEL='chatty' is not valid"),
                         qd::user_error);
    CHECK_FALSE(qd::is_initialized());
  }
  SUBCASE("QD_PER_OFFLOAD, QD_OFFLINE_CACHE and QD_OPT_LEVEL") {
    {
      qd_test::scoped_env env("QD_PER_OFFLOAD", "sometimes");
      CHECK_THROWS_WITH_AS(qd_test::init_cpu(), Contains("QD_PER_OFFLOAD='sometimes'"), qd::user_error);
    }
    {
      qd_test::scoped_env env("QD_OFFLINE_CACHE", "perhaps");
      CHECK_THROWS_WITH_AS(qd_test::init_cpu(), Contains("QD_OFFLINE_CACHE='perhaps'"), qd::user_error);
    }
    {
      qd_test::scoped_env env("QD_OPT_LEVEL", "fast");
      CHECK_THROWS_WITH_AS(qd_test::init_cpu(), Contains("QD_OPT_LEVEL='fast'"), qd::user_error);
    }
  }
  SUBCASE("out-of-range config fields") {
    CHECK_THROWS_WITH_AS(qd_test::init_cpu({.opt_level = 7}), Contains("opt_level = 7"), qd::user_error);
    CHECK_THROWS_WITH_AS(qd_test::init_cpu({.num_compile_threads = 0}), Contains("num_compile_threads = 0"),
                         qd::user_error);
    CHECK_THROWS_WITH_AS(qd_test::init_cpu({.cuda_arch = -90}), Contains("cuda_arch = -90"), qd::user_error);
    CHECK_THROWS_WITH_AS(qd_test::init_cpu({.compile_timeout = -1}), Contains("compile_timeout = -1"), qd::user_error);
  }
  SUBCASE("numbers are read strictly: anything but the plain decimal value the field holds is an error") {
    // Each of these was once read as some other number (strtoll stops at '.', 'e' or
    // a space; 4294967298 truncated to int is 2; strtod reads nan, inf and 1e30).
    struct bad {
      const char* var;
      const char* value;
    };
    for (bad b : {bad{"QD_OPT_LEVEL", "4294967298"},
                  bad{"QD_OPT_LEVEL", "0.5"},
                  bad{"QD_OPT_LEVEL", "-0"},
                  bad{"QD_OPT_LEVEL", "2e0"},
                  bad{"QD_OPT_LEVEL", " 2"},
                  bad{"QD_OPT_LEVEL", "2 "},
                  bad{"QD_OPT_LEVEL", "+2"},
                  bad{"QD_OPT_LEVEL", "4"},
                  bad{"QD_OPT_LEVEL", "nan"},
                  bad{"QD_NUM_COMPILE_THREADS", "0"},
                  bad{"QD_NUM_COMPILE_THREADS", "1e30"},
                  bad{"QD_NUM_COMPILE_THREADS", "99999999999999999999999"},
                  bad{"QD_CPU_MAX_NUM_THREADS", "-1"},
                  bad{"QD_CPU_MAX_NUM_THREADS", "inf"},
                  bad{"QD_RANDOM_SEED", "-1"},
                  bad{"QD_RANDOM_SEED", "18446744073709551616"},
                  bad{"QD_RANDOM_SEED", "0x10"},
                  bad{"QD_CUDA_ARCH", "9.0"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "nan"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "inf"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "1e30"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "0.5"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "-0"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "-1G"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "17179869184G"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "1.5"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "0.3K"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "G"},
                  bad{"QD_OFFLINE_CACHE_MAX_SIZE", "1.G"},
                  bad{"QD_COMPILE_TIMEOUT", "0.5"},
                  bad{"QD_COMPILE_TIMEOUT", "-5"},
                  bad{"QD_COMPILE_TIMEOUT", "1e3"}}) {
      CAPTURE(b.var);
      CAPTURE(b.value);
      qd_test::scoped_env env(b.var, b.value);
      CHECK_THROWS_WITH_AS(qd_test::init_cpu(), Contains(fmt::format("{}='{}' is not valid", b.var, b.value).c_str()),
                           qd::user_error);
      CHECK_FALSE(qd::is_initialized());
    }
  }
  SUBCASE("the GPU device ordinals too, before any library is looked for") {
    for (auto [var, a] : {std::pair{"QD_CUDA_DEVICE", qd::arch::cuda}, std::pair{"QD_AMDGPU_DEVICE", qd::arch::amdgpu}})
      for (const char* value : {"1.5", "-1", "one", "4294967297"}) {
        CAPTURE(value);
        qd_test::scoped_env env(var, value);
        // A user_error even with enable_fallback: atoi read these as 1, -1, 0 and 1.
        CHECK_THROWS_WITH_AS(qd::init({.arch = a, .enable_fallback = true}),
                             Contains(fmt::format("{}='{}' is not valid", var, value).c_str()), qd::user_error);
      }
  }
  SUBCASE("valid numbers are read exactly") {
    {
      qd_test::scoped_env a("QD_OPT_LEVEL", "3"), b("QD_RANDOM_SEED", "18446744073709551615"),
          c("QD_OFFLINE_CACHE_MAX_SIZE", "1.5G"), d("QD_COMPILE_TIMEOUT", "30"), e("QD_NUM_COMPILE_THREADS", "007");
      qd_test::init_cpu();
      CHECK(qd::current_settings().opt_level == 3);
      CHECK(qd::current_settings().random_seed == 18446744073709551615ull);
      CHECK(qd::current_settings().offline_cache_max_size == 3ull << 29);
      CHECK(qd::current_settings().compile_timeout == 30);
      CHECK(qd::current_settings().num_compile_threads == 7);
    }
    {
      qd_test::scoped_env a("QD_OFFLINE_CACHE_MAX_SIZE", "0.25K"), b("QD_COMPILE_TIMEOUT", "0");
      qd_test::init_cpu();
      CHECK(qd::current_settings().offline_cache_max_size == 256);
      CHECK(qd::current_settings().compile_timeout == 0);  // no limit
    }
    qd_test::init_cpu();
    CHECK(qd::current_settings().compile_timeout == 600);  // the default
  }
  qd_test::init_cpu();  // the variables are restored: a plain init works again
  CHECK(qd::is_initialized());
}

TEST_CASE("an unavailable arch is an error without enable_fallback and falls back to cpu with one warning with it") {
  auto k = qd::kernel("after_fallback", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 2.0f * i; });
  });
  SUBCASE("enable_fallback = false") {
    CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::metal, .enable_fallback = false}),
                         Contains("qd::init(arch = metal)"), qd::user_error);
    CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::metal, .enable_fallback = false}),
                         Contains("enable_fallback = true"), qd::user_error);
    CHECK_FALSE(qd::is_initialized());
  }
  SUBCASE("enable_fallback = true") {
    qd_test::log_capture logs;
    qd::init({.arch = qd::arch::metal, .log_level = qd::log_level::warn, .enable_fallback = true});
    auto warnings = logs.at(qd::log_level::warn);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("arch = metal") != std::string::npos);
    CHECK(warnings[0].find("falling back to arch = cpu") != std::string::npos);
    CHECK(warnings[0].find("arch = vulkan through MoltenVK") != std::string::npos);  // where a Mac can go
    CHECK(qd::current_settings().arch == qd::arch::cpu);
    qd::ndarray<float, 1> x(3);
    k(x);
    CHECK(x.to_host() == std::vector<float>{0.0f, 2.0f, 4.0f});
    CHECK(logs.at(qd::log_level::warn).size() == 1);  // launching does not warn again
  }
}

TEST_CASE("a moved-from qd::ndarray passed to a kernel is an error, not a crash") {
  qd_test::init_cpu();
  auto k = qd::kernel("moved", {"x"}, [](qd::types::ndarray<std::int32_t, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = i; });
  });
  qd::ndarray<std::int32_t, 1> x(3);
  auto y = std::move(x);
  CHECK_THROWS_WITH_AS(
      k(x), Contains("kernel 'moved', parameter 'x' (#0, ndarray<i32, 1>): the qd::ndarray passed was moved from"),
      qd::user_error);
  qd::ndarray<std::int32_t, 1> z(5);
  z = std::move(y);
  CHECK_THROWS_WITH_AS(k(y), Contains("moved from"), qd::user_error);
  k(z);
  CHECK(z.to_host() == std::vector<std::int32_t>{0, 1, 2});
}

TEST_CASE("a blank QD_CXX makes qd::init on the CPU fail, naming it") {
  qd_test::scoped_env env("QD_CXX", "  ");
  CHECK_THROWS_WITH_AS(qd_test::init_cpu(), Contains("QD_CXX='  ' is set but blank"), qd::user_error);
  CHECK_FALSE(qd::is_initialized());
}

TEST_CASE("QD_COMPILE_TIMEOUT stops a host compiler that never returns: the launch is a qd::compile_error") {
  char dir[] = "/tmp/qd-hang-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  std::string script = std::string(dir) + "/hang.sh";
  std::ofstream(script) << "#!/bin/sh\ncase \"$*\" in *--version*) echo 'fake 1.0'; exit 0;; esac\nexec sleep 300\n";
  ::chmod(script.c_str(), 0700);
  {
    qd_test::scoped_env cxx("QD_CXX", script.c_str()), timeout("QD_COMPILE_TIMEOUT", "1");
    qd_test::init_cpu({.offline_cache = false});
    CHECK(qd::current_settings().compile_timeout == 1);
    auto k = qd::kernel("never_compiled", [](qd::types::ndarray<float, 1> x) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; });
    });
    qd::ndarray<float, 1> x(4);
    CHECK_THROWS_WITH_AS(k(x), Contains("did not finish within compile_timeout = 1 s"), qd::compile_error);
  }
  std::filesystem::remove_all(dir);
  qd_test::init_cpu();
}

namespace {

// Nests `depth` levels of `kind` ('i' qd::if_, 'e' its .else_, 'w' qd::while_, 'l' a
// serial qd::range_for) around `x[0] += 1`, by C++ recursion while the kernel is traced.
void nest(int depth, char kind, const qd::types::ndarray<std::int32_t, 1>& x) {
  if (depth == 0) {
    x[0] = x[0] + 1;
    return;
  }
  auto inner = [&] { nest(depth - 1, kind, x); };
  switch (kind) {
    case 'i': qd::if_(x[0] >= 0, inner); break;
    case 'e': qd::if_(x[0] < 0, [] {}).else_(inner); break;
    case 'w': {
      qd::var<std::int32_t> once = 0;
      qd::while_([&] { return once < 1; },
                 [&] {
                   once += 1;
                   inner();
                 });
      break;
    }
    default: qd::range_for(0, 1, [&](qd::i32) { inner(); });
  }
}

}  // namespace

TEST_CASE("control flow nested past the documented depth is a qd::user_error while tracing, not a stack overflow") {
  for (char kind : {'i', 'e', 'w', 'l'}) {
    CAPTURE(kind);
    for (qd::arch a : {qd::arch::cpu, qd::arch::reference}) {
      qd::init({.arch = a});
      // 20,000 levels overflowed the stack (in lowering) before; now tracing stops at 201.
      auto deep = qd::kernel("too_deep", [&](qd::types::ndarray<std::int32_t, 1> x) { nest(20000, kind, x); });
      qd::ndarray<std::int32_t, 1> x(1);
      CHECK_THROWS_WITH_AS(deep(x),
                           Contains("kernel 'too_deep': control flow is nested 201 levels deep here; at most 200"),
                           qd::user_error);
      // The limit itself compiles and runs, on the CPU with the host compiler too.
      auto limit = qd::kernel("deepest", [&](qd::types::ndarray<std::int32_t, 1> a) { nest(200, kind, a); });
      limit(x);
      CHECK(x.to_host() == std::vector<std::int32_t>{1});
    }
  }
  // Each dimension of a nested ndrange counts one level.
  qd_test::init_cpu();
  auto wrap = [](int ifs) {
    return qd::kernel("ndrange_nest", [ifs](qd::types::ndarray<std::int32_t, 1> x) {
      auto body = [&](auto& self, int left) -> void {
        if (left == 0) {
          qd::range_for(qd::ndrange(1, 1, 1, 1), [&](qd::i32, qd::i32, qd::i32, qd::i32) { x[0] = x[0] + 1; });
          return;
        }
        qd::if_(x[0] >= 0, [&] { self(self, left - 1); });
      };
      body(body, ifs);
    });
  };
  qd::ndarray<std::int32_t, 1> x(1);
  auto fits = wrap(196);
  fits(x);
  CHECK(x.to_host() == std::vector<std::int32_t>{1});
  auto over = wrap(197);
  CHECK_THROWS_WITH_AS(over(x), Contains("nested 201 levels deep"), qd::user_error);
}

TEST_CASE("an offline cache path that is / or a directory of other files makes qd::init fail instead of filling it") {
  char dir[] = "/tmp/qd-foreign-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  std::ofstream(std::string(dir) + "/report.txt") << "mine";
  CHECK_THROWS_WITH_AS(qd_test::init_cpu({.offline_cache_file_path = std::string(dir)}),
                       Contains("is not a Quadrants cache directory"), qd::user_error);
  CHECK_THROWS_WITH_AS(qd_test::init_cpu({.offline_cache_file_path = std::string(dir)}),
                       Contains("offline_cache_file_path"), qd::user_error);
  CHECK_FALSE(qd::is_initialized());
  CHECK_FALSE(std::filesystem::exists(std::string(dir) + "/kernel"));
  {
    qd_test::scoped_env env("QD_OFFLINE_CACHE_FILE_PATH", "/");
    CHECK_THROWS_WITH_AS(qd_test::init_cpu(), Contains("it is the file system's root"), qd::user_error);
  }
  qd_test::init_cpu({.offline_cache = false, .offline_cache_file_path = std::string(dir)});  // not used: fine
  CHECK(qd::is_initialized());
  std::filesystem::remove_all(dir);
  qd_test::init_cpu();
}
