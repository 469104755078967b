// Human-readable text of the IR, for debug dumps (print_ir) and error messages.
// Nodes are shown with their canonical numbers, as %N.
#pragma once

#include <string>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::ir {

// What the text shows beyond the nodes.
struct text_options {
  bool locations = true;  // "@ file:line" where a statement's source line changes
  // The kernel's parameter names (one per parameter, empty where unnamed): shown in
  // place of #N, the parameter's position.
  const std::vector<std::string>* param_names = nullptr;
};
QD_FUNC std::string to_text(const function& fn, text_options options = {});
QD_FUNC std::string describe(const param_desc& p);  // "ndarray<f32, 2, needs_grad>" or "f32"

}  // namespace qd::inline v0::ir

#ifdef QD_HEADER_ONLY
#include "quadrants/ir/printer-inl.hpp"
#endif
