// Canonical serialization: equal for the same program up to renumbering and
// names, different for any change that alters the generated code.
#include <doctest/doctest.h>

#include "ir/ir_fixtures.hpp"
#include "quadrants/ir/serialize.hpp"

using namespace qd;

QD_CONSTEXPR_CHECK(ir::canonical_bytes(test::running_total_ir()) == ir::canonical_bytes(test::running_total_ir()),
                   "serialization is deterministic at compile time");
QD_CONSTEXPR_CHECK(ir::canonical_bytes(test::running_total_ir(0.0f)) !=
                       ir::canonical_bytes(test::running_total_ir(1.0f)),
                   "a changed constant changes the bytes");

TEST_CASE("node ids do not matter, only program order") {
  // The same program; `padding` emits unreachable nodes first, shifting every id.
  auto build = [](int padding, bool shape_first) {
    ir::function fn;
    ir::builder b(fn);
    b.add_param({true, dtype::f32, 1, false});
    for (int k = 0; k < padding; ++k) b.constant_int(dtype::i64, 99);
    fn.blocks[0].clear();  // the padding is unreachable
    ir::id c = ir::none, n = ir::none;
    if (shape_first) {
      n = b.shape(0, 0);
      c = b.constant_int(dtype::i32, 0);
    } else {
      c = b.constant_int(dtype::i32, 0);
      n = b.shape(0, 0);
    }
    ir::id loop = b.range_for(c, n);
    b.push_block(fn.at(loop).block0);
    std::array<ir::id, 1> i{b.loop_index_of(loop)};
    b.global_store(0, 0, i, b.constant_float(dtype::f32, 2.0));
    b.pop_block();
    return ir::canonical_bytes(fn);
  };
  CHECK(build(0, false) == build(5, false));
  CHECK(build(0, true) == build(3, true));
  // Statements in another order are another program.
  CHECK(build(0, true) != build(0, false));
}

TEST_CASE("every field that changes code changes the bytes") {
  const std::string base = ir::canonical_bytes(test::stale_snapshot_ir());
  CHECK(ir::canonical_bytes(test::stale_snapshot_ir(ir::access::clamp)) != base);
  CHECK(ir::canonical_bytes(test::stale_snapshot_ir(ir::access::grad)) != base);
  ir::function fn = test::stale_snapshot_ir();
  fn.params[1].type = dtype::f64;
  CHECK(ir::canonical_bytes(fn) != base);
  fn = test::stale_snapshot_ir();
  fn.params[1].needs_grad = true;
  CHECK(ir::canonical_bytes(fn) != base);
  fn = test::stale_snapshot_ir();
  fn.is_gradient = true;
  CHECK(ir::canonical_bytes(fn) != base);
}

TEST_CASE("print text is part of the bytes and cannot be confused with nodes") {
  auto with_text = [](std::string text) {
    ir::function fn;
    ir::builder b(fn);
    ir::id v = b.constant_int(dtype::i32, 7);
    b.print({b.add_string(std::move(text)), v});
    return ir::canonical_bytes(fn);
  };
  CHECK(with_text("a") != with_text("b"));
  CHECK(with_text("ab") == with_text("ab"));
}

TEST_CASE("fnv1a is a stable content hash") {
  QD_CONSTEXPR_CHECK(ir::fnv1a("") == 0xcbf29ce484222325ull);
  CHECK(ir::fnv1a("a") == 0xaf63dc4c8601ec8cull);
}

// exact_bytes (cache::variant_key): the arrays as traced, so renumbering changes them, and
// whatever changes the canonical bytes changes them too; source positions do not.
TEST_CASE("exact bytes follow every field and the numbering, not source positions") {
  const ir::function base = test::stale_snapshot_ir();
  const std::string bytes = ir::exact_bytes(base);
  CHECK(ir::exact_bytes(test::stale_snapshot_ir()) == bytes);
  CHECK(ir::exact_bytes(test::stale_snapshot_ir(ir::access::clamp)) != bytes);
  ir::function fn = base;
  fn.params[1].needs_grad = true;
  CHECK(ir::exact_bytes(fn) != bytes);
  fn = base;
  fn.is_gradient = true;
  CHECK(ir::exact_bytes(fn) != bytes);
  fn = base;
  fn.nodes.back().imm += 1;
  CHECK(ir::exact_bytes(fn) != bytes);
  fn = base;
  fn.locs.push_back({});  // where the user wrote it is not what it computes
  CHECK(ir::exact_bytes(fn) == bytes);
  // Unreachable nodes first: the same canonical bytes, other exact bytes.
  auto padded = [](int padding) {
    ir::function f;
    ir::builder b(f);
    b.add_param({true, dtype::f32, 1, false});
    for (int k = 0; k < padding; ++k) b.constant_int(dtype::i64, 99);
    f.blocks[0].clear();
    b.global_store(0, 0, std::array<ir::id, 1>{b.constant_int(dtype::i32, 0)}, b.constant_float(dtype::f32, 2.0));
    return f;
  };
  CHECK(ir::canonical_bytes(padded(0)) == ir::canonical_bytes(padded(2)));
  CHECK(ir::exact_bytes(padded(0)) != ir::exact_bytes(padded(2)));
}
