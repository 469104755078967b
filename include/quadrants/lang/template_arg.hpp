// qd::types::template_arg<T>: a kernel parameter that is a plain C++ value while the
// kernel is traced; each distinct value gets its own traced, split and cached variant.
#pragma once

#include <type_traits>

namespace qd::inline v0::types {

template <class T>
class template_arg {
  static_assert(std::is_same_v<T, std::remove_cv_t<T>> &&
                    (std::is_integral_v<T> || std::is_floating_point_v<T> || std::is_enum_v<T>),
                "qd::types::template_arg<T> takes an integral, floating-point, enum or bool type (a value the kernel "
                "is specialised for); pass arrays as qd::types::ndarray and run-time numbers as qd::f32, qd::i32, ...");

 public:
  using value_type = T;

  constexpr template_arg(T value) noexcept : value_(value) {}
  // Inside the kernel it is the C++ value: `for (int s = 0; s < n_sub; ++s)`.
  constexpr operator T() const noexcept { return value_; }
  constexpr T value() const noexcept { return value_; }

 private:
  T value_;
};

}  // namespace qd::inline v0::types

namespace qd::inline v0::detail {
template <class P>
inline constexpr bool is_template_arg = false;
template <class T>
inline constexpr bool is_template_arg<types::template_arg<T>> = true;
}  // namespace qd::inline v0::detail
