// Device algorithms over qd::ndarray (scans, reductions, radix sort, compaction, reduction
// by key) and qd::hash_grid, all written in the DSL; include next to quadrants.hpp.
#pragma once

#include "quadrants/quadrants.hpp"
#include "quadrants/algorithms/hash_grid.hpp"
#include "quadrants/algorithms/reduce.hpp"
#include "quadrants/algorithms/reduce_by_key.hpp"
#include "quadrants/algorithms/scan.hpp"
#include "quadrants/algorithms/select.hpp"
#include "quadrants/algorithms/sort.hpp"
