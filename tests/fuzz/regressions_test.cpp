// Replays every case the differential fuzzer found (tests/fuzz/regressions/*.qdfuzz):
// whole, split, unchecked split, the kernel as written and the CPU (at every opt level) must agree now.
#include <doctest/doctest.h>

#include <string>

#include "fuzz/differential.hpp"

TEST_CASE("every saved fuzzer finding now gives the same results in every variant") {
  const auto cases = qd_fuzz::saved_cases(QD_FUZZ_REGRESSIONS);
  REQUIRE(cases.size() >= 4);
  for (const auto& saved : cases) {
    const std::string& file = saved.first;  // not a structured binding: Clang 14 cannot capture one (CAPTURE)
    const qd_fuzz::fuzz_case& c = saved.second;
    CAPTURE(file);
    for (int opt = 0; opt <= 3; ++opt) {
      qd_fuzz::check_options o;
      o.cpu = true;
      o.opt_level = opt;
      const qd_fuzz::case_report r = qd_fuzz::check(c, o);
      CHECK_MESSAGE(r.what == qd_fuzz::finding::none, qd_fuzz::name(r.what) << ": " << r.detail);
    }
  }
}
