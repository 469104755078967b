// The IR printer: readable, canonical numbering, one line per statement.
#include <doctest/doctest.h>

#include "ir/ir_fixtures.hpp"
#include "quadrants/ir/printer.hpp"

using namespace qd;

TEST_CASE("the printer shows parameters, loops, atomics and stores") {
  std::string text = ir::to_text(test::running_total_ir());
  CHECK(text.find("kernel(#0: ndarray<f32, 1>, #1: ndarray<f32, 1>)") != std::string::npos);
  CHECK(text.find("range_for") != std::string::npos);
  CHECK(text.find("local_atomic f32 add") != std::string::npos);
  CHECK(text.find("global_store f32 #1[") != std::string::npos);
  CHECK(text.find("%0 = constant f32 0") != std::string::npos);
}

TEST_CASE("describe names array and scalar parameters") {
  CHECK(ir::describe({true, dtype::f64, 3, true}) == "ndarray<f64, 3, needs_grad>");
  CHECK(ir::describe({false, dtype::i32, 0, false}) == "i32");
}
