// The same kernel source built by g++ and by clang++ draws the same random numbers
// (SPEC §13.4's port of mpm88): a draw's stream position follows where it is written,
// not the order in which the compiler evaluates a call's arguments. draw_order_kernel.cpp
// is compiled by each compiler into a namespace of its own and linked here.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/runtime_test_support.hpp"

namespace qd_test::by_gcc {
int first_argument_first();
std::vector<float> draws();
std::vector<float> helper_draws();
}  // namespace qd_test::by_gcc
namespace qd_test::by_clang {
int first_argument_first();
std::vector<float> draws();
std::vector<float> helper_draws();
}  // namespace qd_test::by_clang

namespace {
template <class F>
std::vector<float> run(F&& draws) {
  qd_test::init_cpu({.random_seed = 5});
  auto values = draws();
  qd::reset();
  return values;
}
}  // namespace

TEST_CASE("g++ and clang++ builds of one kernel draw the same numbers") {
  const bool orders_differ = qd_test::by_gcc::first_argument_first() != qd_test::by_clang::first_argument_first();
  if (!orders_differ) MESSAGE("these two compilers evaluate arguments in the same order: the test shows less");
  const auto gcc = run(qd_test::by_gcc::draws);
  const auto clang = run(qd_test::by_clang::draws);
  REQUIRE(gcc.size() == clang.size());
  CHECK(gcc == clang);
  for (float v : gcc) CHECK(v > -1.0f);

  // What the compilers would do without the source order: draws that only evaluation
  // order tells apart (written at one place) come out swapped between the two builds.
  const auto gcc_helper = run(qd_test::by_gcc::helper_draws);
  const auto clang_helper = run(qd_test::by_clang::helper_draws);
  REQUIRE(gcc_helper.size() == clang_helper.size());
  if (orders_differ) {
    for (std::size_t k = 0; k + 1 < gcc_helper.size(); k += 2) {
      CHECK(gcc_helper[k] == clang_helper[k + 1]);
      CHECK(gcc_helper[k + 1] == clang_helper[k]);
    }
  }
}
