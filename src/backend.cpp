// Compiled mode of the library: the backends' implementation (-inl) files (src/quadrants.cpp).
#define QD_IMPLEMENTATION_PART 2
#include "quadrants/detail/implementation_core.hpp"
