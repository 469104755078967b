// qd::ad::gradcheck: a kernel's adjoint against central finite differences of the kernel
// itself, on its qd::needs_grad arrays, for random output seeds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "quadrants/runtime/ndarray.hpp"

namespace qd::inline v0::ad {

struct gradcheck_options {
  double eps = 1e-6;   // the finite-difference step
  double rtol = 1e-5;  // an element passes when |adjoint - differences| <= atol + rtol * |differences|
  double atol = 1e-8;
  int samples = 32;  // elements checked per needs_grad array, chosen at random (0: every element)
  std::uint64_t seed = 1;
};

struct gradcheck_result {
  bool ok = true;
  double max_relative_error = 0;  // max |adjoint - differences| / max(|differences|, |adjoint|), 0 where both are 0
  std::string worst;              // the element with that error, and both values
};

namespace gradcheck_detail {

// What gradcheck keeps of one floating-point qd::ndarray argument.
struct gradcheck_array {
  std::vector<double> before, grad_before, seed, adjoint;
  bool differentiable = false;
};

inline double gradcheck_random(std::uint64_t& state) {  // splitmix64, in [-1, 1)
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

template <class A>
inline constexpr bool gradcheck_float_array = false;
template <class T, int N>
inline constexpr bool gradcheck_float_array<ndarray<T, N>> = std::is_floating_point_v<T>;

template <class T>
std::vector<double> widen(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}
template <class T, int N>
void assign(ndarray<T, N>& a, const std::vector<double>& v) {
  std::vector<T> narrow(v.size());
  for (std::size_t k = 0; k < v.size(); ++k) narrow[k] = static_cast<T>(v[k]);
  a.from_host(narrow);
}

// Calls f(array, slot) for each floating-point qd::ndarray argument; other arguments pass through.
template <class F, class... A>
void for_each_float_array(F&& f, A&... args) {
  std::size_t slot = 0;
  auto one = [&](auto& a) {
    if constexpr (gradcheck_float_array<std::remove_cv_t<std::remove_reference_t<decltype(a)>>>) f(a, slot++);
  };
  (one(args), ...);
}

}  // namespace gradcheck_detail

// Runs the forward kernel and its adjoint with random seeds in every needs_grad array's
// gradient, and compares the gradients of L = sum(seed * array after the launch) with
// respect to the arrays before it against central differences of L, one sampled element
// at a time (two forward launches each). Use f64 arrays: f32 differences are too coarse
// for the default tolerances. Every array holds its values and gradient from before the
// call again on return. Arrays other than floating-point qd::ndarrays (qd::external_array,
// vector arrays) are passed through as they are, and must not be written by the kernel.
template <class K, class... A>
gradcheck_result gradcheck(const gradcheck_options& o, K& kernel, A&&... args) {
  std::vector<gradcheck_detail::gradcheck_array> s;
  std::uint64_t rng = o.seed;
  gradcheck_detail::for_each_float_array(
      [&](auto& a, std::size_t) {
        gradcheck_detail::gradcheck_array g;
        g.before = gradcheck_detail::widen(a.to_host());
        g.differentiable = a.has_grad();
        if (g.differentiable) {
          g.grad_before = gradcheck_detail::widen(a.grad().to_host());
          for (std::size_t k = 0; k < g.before.size(); ++k) g.seed.push_back(gradcheck_detail::gradcheck_random(rng));
        }
        s.push_back(std::move(g));
      },
      args...);
  auto restore = [&] {
    gradcheck_detail::for_each_float_array(
        [&](auto& a, std::size_t slot) { gradcheck_detail::assign(a, s[slot].before); }, args...);
  };
  // The adjoint: seeds in the gradients, the forward launch, then its adjoint.
  gradcheck_detail::for_each_float_array(
      [&](auto& a, std::size_t slot) {
        if (s[slot].differentiable) gradcheck_detail::assign(a.grad(), s[slot].seed);
      },
      args...);
  auto put_back = [&] {
    restore();
    gradcheck_detail::for_each_float_array(
        [&](auto& a, std::size_t slot) {
          if (s[slot].differentiable) gradcheck_detail::assign(a.grad(), s[slot].grad_before);
        },
        args...);
  };
  try {
    kernel(args...);
    kernel.grad(args...);
  } catch (...) {  // a refused adjoint: the arrays as they were, then the error
    put_back();
    throw;
  }
  gradcheck_detail::for_each_float_array(
      [&](auto& a, std::size_t slot) {
        if (s[slot].differentiable) s[slot].adjoint = gradcheck_detail::widen(a.grad().to_host());
      },
      args...);
  auto loss = [&] {
    restore();
    kernel(args...);
    double l = 0;
    gradcheck_detail::for_each_float_array(
        [&](auto& a, std::size_t slot) {
          if (!s[slot].differentiable) return;
          const std::vector<double> after = gradcheck_detail::widen(a.to_host());
          for (std::size_t k = 0; k < after.size(); ++k) l += s[slot].seed[k] * after[k];
        },
        args...);
    return l;
  };
  gradcheck_result r;
  std::size_t array_index = 0;
  for (std::size_t slot = 0; slot < s.size(); ++slot) {
    gradcheck_detail::gradcheck_array& g = s[slot];
    if (!g.differentiable) continue;
    std::vector<std::size_t> elements;
    const std::size_t count = g.before.size();
    if (o.samples <= 0 || static_cast<std::size_t>(o.samples) >= count) {
      for (std::size_t k = 0; k < count; ++k) elements.push_back(k);
    } else {
      for (int k = 0; k < o.samples; ++k)
        elements.push_back(static_cast<std::size_t>((gradcheck_detail::gradcheck_random(rng) + 1.0) * 0.5 *
                                                    static_cast<double>(count)) %
                           count);
    }
    for (std::size_t e : elements) {
      const double x = g.before[e];
      g.before[e] = x + o.eps;
      const double hi = loss();
      g.before[e] = x - o.eps;
      const double lo = loss();
      g.before[e] = x;
      const double fd = (hi - lo) / (2 * o.eps), ad = g.adjoint[e];
      const double diff = std::abs(ad - fd), scale = std::max(std::abs(fd), std::abs(ad));
      const double rel = diff == 0 ? 0.0 : diff / scale;
      const bool pass = diff <= o.atol + o.rtol * std::abs(fd);
      if (!pass) r.ok = false;
      if (r.worst.empty() || rel > r.max_relative_error) {
        r.max_relative_error = rel;
        r.worst = "array argument " + std::to_string(array_index) + ", element " + std::to_string(e) + ": adjoint " +
                  std::to_string(ad) + ", central differences " + std::to_string(fd);
      }
    }
    ++array_index;
  }
  put_back();
  return r;
}

template <class K, class... A>
requires(!std::is_same_v<std::remove_cvref_t<K>, gradcheck_options>) gradcheck_result
    gradcheck(K& kernel, A&&... args) {
  return gradcheck(gradcheck_options{}, kernel, args...);
}

}  // namespace qd::inline v0::ad
