// Quadrants' implementation (every -inl file), compiled into the one translation
// unit of a program that includes this header; its other TUs parse declarations only.
//
// Three ways to build with Quadrants (docs/architecture.md, "Header-only, three ways"):
//  - everything inline: include <quadrants/quadrants.hpp> and nothing else; each TU
//    compiles the whole implementation (about 10 s at -O2; fine for one-file programs);
//  - once per program, still header-only: define QD_SEPARATE_COMPILATION in every
//    TU and include this header in exactly one (the CMake target
//    quadrants::header-only does both: it adds share/quadrants/implementation.cpp);
//  - the compiled library quadrants::quadrants (src/*.cpp).
#pragma once

#if defined(QD_HEADER_ONLY)
#error \
    "<quadrants/implementation.hpp> must come before any other Quadrants header in its translation unit, which must not be compiled in the all-inline mode: define QD_SEPARATE_COMPILATION for every translation unit of the program"
#endif
#ifndef QD_SEPARATE_COMPILATION
#define QD_SEPARATE_COMPILATION 1
#endif

#include "quadrants/base/api.hpp"

#include "quadrants/detail/implementation_core.hpp"
#include "quadrants/detail/implementation_cache.hpp"
