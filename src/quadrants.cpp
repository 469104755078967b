// Compiled mode of the library: every implementation header (-inl), built once.
// Header-only mode includes the same files from each public header instead.
#include "quadrants/base/log-inl.hpp"
#include "quadrants/ir/printer-inl.hpp"
#include "quadrants/lang/trace-inl.hpp"
