// Compiled mode of the library, first part: the implementation (-inl) files of base, ir,
// lang, autodiff and codegen (src/backend.cpp, src/runtime.cpp and src/cache.cpp have
// the rest, so the four build in parallel).
#define QD_IMPLEMENTATION_PART 1
#include "quadrants/detail/implementation_core.hpp"
