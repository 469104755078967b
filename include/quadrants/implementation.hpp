// Quadrants' implementation (every -inl file), compiled into the one translation
// unit of a program that includes this header; its other TUs parse declarations only.
//
// Three ways to build with Quadrants (docs/architecture.md, "Header-only, three ways"):
//  - everything inline: include <quadrants/quadrants.hpp> and nothing else; each TU
//    compiles the whole implementation (about 10 s at -O2; fine for one-file programs);
//  - once per program, still header-only: define QD_SEPARATE_COMPILATION in every
//    TU and include this header in exactly one (the CMake target
//    quadrants::header-only does both: it adds share/quadrants/implementation.cpp);
//  - the compiled library quadrants::quadrants (src/quadrants.cpp, src/cache.cpp).
#pragma once

#if defined(QD_HEADER_ONLY)
#error "<quadrants/implementation.hpp> must come before any other Quadrants header in its translation unit, which must not be compiled in the all-inline mode: define QD_SEPARATE_COMPILATION for every translation unit of the program"
#endif
#ifndef QD_SEPARATE_COMPILATION
#define QD_SEPARATE_COMPILATION 1
#endif

#include "quadrants/base/api.hpp"

// Keep in step with src/quadrants.cpp and src/cache.cpp (tests/package/implementation_check.cmake).
#include "quadrants/base/log-inl.hpp"
#include "quadrants/ir/printer-inl.hpp"
#include "quadrants/ir/verify-inl.hpp"
#include "quadrants/lang/trace-inl.hpp"
#include "quadrants/codegen/lower-inl.hpp"
#include "quadrants/codegen/cpp_emitter-inl.hpp"
#include "quadrants/codegen/reductions-inl.hpp"
#include "quadrants/backend/cpu/thread_pool-inl.hpp"
#include "quadrants/backend/cpu/compiler-inl.hpp"
#include "quadrants/backend/cpu/module-inl.hpp"
#include "quadrants/backend/cpu/device-inl.hpp"
#include "quadrants/backend/shared_library-inl.hpp"
#include "quadrants/backend/compiler_log-inl.hpp"
#include "quadrants/backend/gpu_task_params-inl.hpp"
#include "quadrants/backend/cuda/driver-inl.hpp"
#include "quadrants/backend/cuda/nvrtc-inl.hpp"
#include "quadrants/backend/cuda/device-inl.hpp"
#include "quadrants/backend/amdgpu/hip-inl.hpp"
#include "quadrants/backend/amdgpu/hiprtc-inl.hpp"
#include "quadrants/backend/amdgpu/device-inl.hpp"
#include "quadrants/backend/reference/interpreter-inl.hpp"
#include "quadrants/backend/reference/device-inl.hpp"
#include "quadrants/backend/registry-inl.hpp"
#include "quadrants/cache/entry-inl.hpp"
#include "quadrants/cache/key-inl.hpp"
#include "quadrants/cache/store-inl.hpp"
#include "quadrants/cache/records-inl.hpp"
#include "quadrants/cache/hmac-inl.hpp"
#include "quadrants/cache/remote-inl.hpp"
#include "quadrants/runtime/config-inl.hpp"
#include "quadrants/runtime/program-inl.hpp"
#include "quadrants/runtime/ndarray-inl.hpp"
#include "quadrants/runtime/kernel_state-inl.hpp"
#include "quadrants/runtime/code_lookup-inl.hpp"
#include "quadrants/runtime/variant_builder-inl.hpp"
#include "quadrants/runtime/variant_choice-inl.hpp"
#include "quadrants/runtime/launch-inl.hpp"
#include "quadrants/runtime/statistics-inl.hpp"
