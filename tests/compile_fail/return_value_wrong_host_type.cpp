// The host value of a returned tuple is a std::tuple of the elements' C++ types.
// expect: conversion from|cannot convert|no viable conversion
#include <quadrants/quadrants.hpp>
#include <tuple>
void run() {
  auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) { return std::tuple{qd::f32(x[0]), qd::i32(1)}; });
  qd::ndarray<float, 1> a(4);
#ifdef QD_MISUSE
  float r = k(a);
#else
  std::tuple<float, std::int32_t> r = k(a);
#endif
  (void)r;
}
