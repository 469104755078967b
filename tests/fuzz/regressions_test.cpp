// Replays every case the differential fuzzer found (tests/fuzz/regressions/*.qdfuzz):
// whole, split, unchecked split, the kernel as written and the CPU (at every opt level) must agree now.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/differential.hpp"

TEST_CASE("every saved fuzzer finding now gives the same results in every variant") {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(QD_FUZZ_REGRESSIONS))
    if (e.path().extension() == ".qdfuzz") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 4);
  for (const auto& path : files) {
    CAPTURE(path.filename().string());
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const qd_fuzz::fuzz_case c = qd_fuzz::from_file_text(text.str());
    for (int opt = 0; opt <= 3; ++opt) {
      qd_fuzz::check_options o;
      o.cpu = true;
      o.opt_level = opt;
      const qd_fuzz::case_report r = qd_fuzz::check(c, o);
      CHECK_MESSAGE(r.what == qd_fuzz::finding::none, qd_fuzz::name(r.what) << ": " << r.detail);
    }
  }
}
