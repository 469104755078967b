// Implementation of autodiff/derivative.hpp.
#pragma once

#include "quadrants/autodiff/derivative.hpp"

namespace qd::inline v0::autodiff {

QD_FUNC ir::id unary_derivative(ir::builder& b, ir::unary_op op, dtype t, ir::id x, ir::id y, ir::id g) {
  using u = ir::unary_op;
  auto num = [&](double v) { return b.constant_float(t, v); };
  auto mul = [&](ir::id p, ir::id q) { return b.binary(ir::binary_op::mul, t, p, q); };
  auto div = [&](ir::id p, ir::id q) { return b.binary(ir::binary_op::div, t, p, q); };
  auto neg = [&](ir::id p) { return b.unary(u::neg, t, p); };
  auto one_and = [&](ir::binary_op o, ir::id p) { return b.binary(o, t, num(1.0), p); };
  const double ln2 = 0.69314718055994530942;
  if (op == u::neg) return neg(g);
  if (op == u::sqrt) return div(mul(g, num(0.5)), y);
  if (op == u::exp) return mul(g, y);
  if (op == u::log) return div(g, x);
  if (op == u::sin) return mul(g, b.unary(u::cos, t, x));
  if (op == u::cos) return neg(mul(g, b.unary(u::sin, t, x)));
  if (op == u::tanh) return mul(g, one_and(ir::binary_op::sub, mul(y, y)));
  if (op == u::tan) return mul(g, one_and(ir::binary_op::add, mul(y, y)));
  if (op == u::abs) {
    const ir::id zero = num(0.0);
    return b.select(t, b.binary(ir::binary_op::gt, dtype::boolean, x, zero), g,
                    b.select(t, b.binary(ir::binary_op::lt, dtype::boolean, x, zero), neg(g), zero));
  }
  if (op == u::asin || op == u::acos)  // +-1 / sqrt(1 - x^2)
    return div(op == u::asin ? g : neg(g), b.unary(u::sqrt, t, one_and(ir::binary_op::sub, mul(x, x))));
  if (op == u::rsqrt) return mul(g, mul(num(-0.5), mul(y, mul(y, y))));
  if (op == u::log2) return div(g, mul(x, num(ln2)));
  if (op == u::exp2) return mul(g, mul(y, num(ln2)));
  return ir::none;
}

QD_FUNC ir::id binary_derivative(ir::builder& b, ir::binary_op op, dtype t, ir::id x, ir::id z, ir::id r, int side,
                                 ir::id g) {
  using o = ir::binary_op;
  auto bin = [&](o k, ir::id p, ir::id q) { return b.binary(k, t, p, q); };
  auto mul = [&](ir::id p, ir::id q) { return bin(o::mul, p, q); };
  auto neg = [&](ir::id p) { return b.unary(ir::unary_op::neg, t, p); };
  const ir::id zero = b.constant_float(t, 0.0);
  if (op == o::add) return g;
  if (op == o::sub) return side == 0 ? g : neg(g);
  if (op == o::mul) return mul(g, side == 0 ? z : x);
  if (op == o::div) return side == 0 ? bin(o::div, g, z) : neg(bin(o::div, mul(g, r), z));
  if (op == o::min || op == o::max) {  // the result is x when x < z (min) or x > z (max), else z
    const ir::id takes_x = b.binary(op == o::min ? o::lt : o::gt, dtype::boolean, x, z);
    return side == 0 ? b.select(t, takes_x, g, zero) : b.select(t, takes_x, zero, g);
  }
  if (op == o::atan2) {  // atan2(x, z): (z, -x) / (x^2 + z^2)
    const ir::id r2 = bin(o::add, mul(x, x), mul(z, z));
    return side == 0 ? bin(o::div, mul(g, z), r2) : neg(bin(o::div, mul(g, x), r2));
  }
  if (op == o::fmod || op == o::floormod)  // x - q z with q an integer: q = (x - r) / z
    return side == 0 ? g : neg(mul(g, bin(o::div, bin(o::sub, x, r), z)));
  if (op == o::pow) {
    if (side == 0) return mul(mul(g, z), bin(o::pow, x, bin(o::sub, z, b.constant_float(t, 1.0))));
    return b.select(t, b.binary(o::gt, dtype::boolean, x, zero), mul(mul(g, r), b.unary(ir::unary_op::log, t, x)),
                    zero);
  }
  return ir::none;
}

}  // namespace qd::inline v0::autodiff
