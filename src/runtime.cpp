// Compiled mode of the library: the runtime's implementation (-inl) files (src/quadrants.cpp).
#define QD_IMPLEMENTATION_PART 3
#include "quadrants/detail/implementation_core.hpp"
