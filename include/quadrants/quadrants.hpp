// Quadrants C++: GPU kernels as C++ lambdas, traced, split into constructs,
// compiled at run time and cached. Include this header; see docs/dsl.md.
#pragma once

#include "quadrants/base/api.hpp"
#include "quadrants/base/dtype.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/log.hpp"
#include "quadrants/lang/expr.hpp"
#include "quadrants/lang/math.hpp"
#include "quadrants/lang/ndarray_param.hpp"
#include "quadrants/lang/statements.hpp"
#include "quadrants/lang/var.hpp"
#include "quadrants/analysis/fallback.hpp"
#include "quadrants/runtime/config.hpp"
#include "quadrants/runtime/coverage.hpp"
#include "quadrants/runtime/kernel.hpp"
#include "quadrants/runtime/ndarray.hpp"
#include "quadrants/runtime/statistics.hpp"
