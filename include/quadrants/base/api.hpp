// Build-mode switches shared by every header.
// Header-only is the default mode; QD_SEPARATE_COMPILATION compiles the -inl files once.
#pragma once

// In header-only mode (the default) each public header pulls in its own
// implementation file (`*-inl.hpp`) and its non-template functions are inline.
// The CMake target quadrants::quadrants defines QD_SEPARATE_COMPILATION for its
// consumers and compiles every -inl file once in src/*.cpp, so a user
// translation unit parses only declarations and the tracing templates.
#if defined(QD_SEPARATE_COMPILATION)
#define QD_FUNC
#else
#define QD_HEADER_ONLY 1
#define QD_FUNC inline
#endif

// Checked builds verify the IR after tracing and after lowering (ir::verify): any
// build without NDEBUG, this project's sanitizer builds, or one defining QD_CHECKED.
#if !defined(QD_CHECKED) && !defined(NDEBUG)
#define QD_CHECKED 1
#endif
namespace qd::inline v0::detail {
#if defined(QD_CHECKED)
inline constexpr bool checked_build = true;
#else
inline constexpr bool checked_build = false;
#endif
}  // namespace qd::inline v0::detail

#define QD_VERSION_MAJOR 0
#define QD_VERSION_MINOR 1
#define QD_VERSION_PATCH 0
#define QD_VERSION_STRING "0.1.0"
