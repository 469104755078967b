// Gradient checks for the autodiff tests: central finite differences in f64, one
// coordinate at a time, and a relative comparison (absolute below magnitude 1).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

namespace qd_test {

inline std::vector<double> central_differences(const std::function<double(const std::vector<double>&)>& f,
                                               const std::vector<double>& x, double h = 1e-6) {
  std::vector<double> g(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    std::vector<double> hi = x, lo = x;
    hi[j] += h;
    lo[j] -= h;
    g[j] = (f(hi) - f(lo)) / (2 * h);
  }
  return g;
}

inline void check_close(const std::vector<double>& got, const std::vector<double>& want, double rel = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CAPTURE(got[i]);
    CAPTURE(want[i]);
    CHECK(std::abs(got[i] - want[i]) <= rel * std::max(1.0, std::abs(want[i])));
  }
}

}  // namespace qd_test
