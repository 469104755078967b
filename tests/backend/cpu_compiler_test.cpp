// The CPU compiler wrapper and module loader: failures carry the compiler's log
// and the generated line; modules load from bytes; missing entries are errors.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "quadrants/backend/cpu/compiler.hpp"
#include "quadrants/backend/cpu/module.hpp"
#include "quadrants/backend/cpu/prelude.hpp"
#include "quadrants/base/error.hpp"

using namespace qd::backend::cpu;

TEST_CASE("a shared object compiled from source loads from its bytes and runs") {
  auto bytes = compile_shared_object(
      "extern \"C\" __attribute__((visibility(\"default\"))) int qd_answer(int x) { return x * 6 + 4; }\n", {}, "test");
  REQUIRE(bytes.size() > 100);
  module m(bytes, "test module");
  auto answer = reinterpret_cast<int (*)(int)>(m.symbol("qd_answer"));
  CHECK(answer(7) == 46);
  CHECK_THROWS_AS(m.symbol("qd_missing"), qd::driver_error);
  // Two modules with the same entry name stay apart (memfd paths are not reused while loaded).
  auto other = compile_shared_object(
      "extern \"C\" __attribute__((visibility(\"default\"))) int qd_answer(int x) { return -x; }\n", {}, "test");
  module m2(other, "second module");
  CHECK(reinterpret_cast<int (*)(int)>(m2.symbol("qd_answer"))(7) == -7);
  CHECK(answer(1) == 10);
}

TEST_CASE("a compile failure is a qd::compile_error with the log, the source and the offending line") {
  const char* source = "extern \"C\" int ok() { return 1; }\nextern \"C\" int broken() { return undeclared_name; }\n";
  try {
    compile_shared_object(source, {}, "kernel 'broken'");
    FAIL("the compile should have failed");
  } catch (const qd::compile_error& e) {
    std::string what = e.what();
    CHECK(what.find("kernel 'broken'") != std::string::npos);
    CHECK(what.find("generated line 2: extern \"C\" int broken()") != std::string::npos);
    CHECK(e.log().find("undeclared_name") != std::string::npos);
    CHECK(e.source() == source);
    CHECK(e.kernel() == "kernel 'broken'");
  }
}

TEST_CASE("generated code checks its structs' layout against the runtime's, member by member") {
  // The prelude alone compiles: qd_array and qd_ctx lie as array_abi and ctx_abi.
  CHECK(compile_shared_object(translation_unit_prelude(), {}, "prelude").size() > 0);
  // A member the runtime places elsewhere fails the compile, naming the member.
  const std::string drifted = translation_unit_prelude() +
                              qd::backend::member_at("qd_ctx", "error", offsetof(ctx_abi, error) + 8) +
                              qd::backend::member_at("qd_array", "grad", 0);
  try {
    compile_shared_object(drifted, {}, "prelude");
    FAIL("a drifted layout should not compile");
  } catch (const qd::compile_error& e) {
    CHECK(e.log().find("qd_ctx.error must lie where the runtime puts it") != std::string::npos);
    CHECK(e.log().find("qd_array.grad must lie where the runtime puts it") != std::string::npos);
  }
}

TEST_CASE("the compiler fingerprint names the resolved executable without running it") {
  std::string f = compiler_fingerprint();
  CHECK(f.find("c++") != std::string::npos);
  CHECK(f.find("| /") != std::string::npos);  // resolved to an absolute path with size and time
}

TEST_CASE("code-affecting flags follow the options") {
  auto plain = compile_flags({2, false});
  auto fast = compile_flags({3, true});
  CHECK(std::find(plain.begin(), plain.end(), "-O2") != plain.end());
  CHECK(std::find(plain.begin(), plain.end(), "-ffp-contract=off") != plain.end());
  CHECK(std::find(fast.begin(), fast.end(), "-O3") != fast.end());
  CHECK(std::find(fast.begin(), fast.end(), "-ffast-math") != fast.end());
}
