// qd::config from the user's side: a bad value is blamed on where it came from
// (the field or its QD_* variable), and qd::init_best_available picks QD_ARCH,
// else a GPU that works, else the CPU.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"

using doctest::Contains;

namespace {

// The message of the qd::user_error that qd::init(c) throws.
std::string init_error(const qd::config& c) {
  try {
    qd::init(c);
  } catch (const qd::user_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("an out-of-range setting names its source: the config field or the QD_* variable") {
  struct field {
    const char* name;
    const char* variable;
    const char* bad;
    int bad_value;
  };
  for (const field& f :
       {field{"cpu_max_num_threads", "QD_CPU_MAX_NUM_THREADS", "0", 0},
        field{"num_compile_threads", "QD_NUM_COMPILE_THREADS", "0", 0}, field{"opt_level", "QD_OPT_LEVEL", "7", 7}}) {
    CAPTURE(f.name);
    qd::config from_field{.arch = qd::arch::cpu};
    if (std::string(f.name) == "cpu_max_num_threads") from_field.cpu_max_num_threads = f.bad_value;
    if (std::string(f.name) == "num_compile_threads") from_field.num_compile_threads = f.bad_value;
    if (std::string(f.name) == "opt_level") from_field.opt_level = f.bad_value;
    std::string field_error = init_error(from_field);
    CHECK(field_error.find(std::string("config.") + f.name) != std::string::npos);
    CHECK(field_error.find(f.variable) == std::string::npos);

    qd_test::scoped_env env(f.variable, f.bad);
    std::string variable_error = init_error({.arch = qd::arch::cpu});
    CHECK(variable_error.find(f.variable) != std::string::npos);
    CHECK(variable_error.find(std::string("config.") + f.name) == std::string::npos);
    CHECK_FALSE(qd::is_initialized());
  }
  SUBCASE("remote_cache_timeout_ms, checked when a remote cache is set") {
    qd::config c{.arch = qd::arch::cpu};
    c.remote_cache = "redis://127.0.0.1:1";
    c.remote_cache_unauthenticated = true;
    c.remote_cache_timeout_ms = 0;
    std::string field_error = init_error(c);
    CHECK(field_error.find("config.remote_cache_timeout_ms = 0") != std::string::npos);
    c.remote_cache_timeout_ms.reset();
    qd_test::scoped_env env("QD_REMOTE_CACHE_TIMEOUT_MS", "0");
    std::string variable_error = init_error(c);
    CHECK(variable_error.find("QD_REMOTE_CACHE_TIMEOUT_MS='0'") != std::string::npos);
    CHECK(variable_error.find("config.remote_cache_timeout_ms") == std::string::npos);
  }
}

TEST_CASE("qd::init_best_available: QD_ARCH or a field wins; otherwise a GPU that works, else the CPU, silently") {
  qd_test::log_capture logs;
  SUBCASE("nothing asked: a GPU if one initializes, else the CPU, and no fallback warning either way") {
    qd_test::scoped_env no_arch("QD_ARCH", "");  // an empty variable counts as unset
    qd::arch got = qd::init_best_available({.log_level = qd::log_level::info});
    CHECK(qd::current_settings().arch == got);
    // The CPU is chosen only when neither GPU starts with fallback off.
    if (got == qd::arch::cpu) {
      for (qd::arch gpu : {qd::arch::cuda, qd::arch::amdgpu})
        CHECK_THROWS_AS(qd::init({.arch = gpu, .enable_fallback = false}), qd::user_error);
    } else {
      CHECK((got == qd::arch::cuda || got == qd::arch::amdgpu));
    }
    CHECK(logs.at(qd::log_level::warn).empty());
  }
  SUBCASE("QD_ARCH is honoured (the probe never overrides it)") {
    qd_test::scoped_env arch("QD_ARCH", "reference");
    CHECK(qd::init_best_available() == qd::arch::reference);
    CHECK(qd::current_settings().requested_arch == qd::arch::reference);
  }
  SUBCASE("an explicit field is honoured") {
    CHECK(qd::init_best_available({.arch = qd::arch::reference}) == qd::arch::reference);
  }
  SUBCASE("the other fields are kept") {
    qd_test::scoped_env no_arch("QD_ARCH", "");
    qd::init_best_available({.offline_cache = false, .opt_level = 1});
    CHECK(qd::current_settings().opt_level == 1);
    CHECK_FALSE(qd::current_settings().offline_cache);
  }
  SUBCASE("an invalid variable is still an error") {
    qd_test::scoped_env bad("QD_OPT_LEVEL", "9");
    CHECK_THROWS_WITH_AS(qd::init_best_available(), Contains("QD_OPT_LEVEL"), qd::user_error);
  }
  qd::reset();
}
