// The translation unit that quadrants::header-only adds to each target linking it:
// Quadrants' implementation compiled once, with that target's compiler and flags.
#include <quadrants/implementation.hpp>
