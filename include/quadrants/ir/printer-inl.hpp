// Implementation of ir/printer.hpp.
#pragma once

#include <bit>

#include "quadrants/base/format.hpp"
#include "quadrants/ir/graph_mark.hpp"
#include "quadrants/ir/printer.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::ir {

QD_FUNC std::string describe(const param_desc& p) {
  if (!p.is_array) return std::string(name(p.type));
  return fmt::format("ndarray<{}, {}{}>", name(p.type), p.ndim, p.needs_grad ? ", needs_grad" : "");
}

namespace detail {
QD_FUNC std::string constant_text(const node& n) {
  switch (n.type) {
    case dtype::f32: return fmt::format("{}", std::bit_cast<float>(static_cast<std::uint32_t>(n.imm)));
    case dtype::f64: return fmt::format("{}", std::bit_cast<double>(n.imm));
    case dtype::f16: return fmt::format("{}", static_cast<float>(half::from_bits(static_cast<std::uint16_t>(n.imm))));
    case dtype::boolean: return n.imm ? "true" : "false";
    case dtype::u64: return fmt::format("{}", static_cast<std::uint64_t>(n.imm));
    case dtype::u8:
    case dtype::i8:
    case dtype::i16:
    case dtype::u16:
    case dtype::i32:
    case dtype::u32:
    case dtype::i64: return fmt::format("{}", n.imm);
  }
  return fmt::format("{}", n.imm);
}
}  // namespace detail

QD_FUNC std::string to_text(const function& fn, text_options options) {
  std::vector<id> number = canonical_numbering(fn);
  auto ref = [&](id i) {
    return i == none ? std::string("-") : fmt::format("%{}", number[static_cast<std::size_t>(i)]);
  };
  auto param = [&](std::int32_t p) {
    const auto* names = options.param_names;
    if (names && p >= 0 && static_cast<std::size_t>(p) < names->size() &&
        !(*names)[static_cast<std::size_t>(p)].empty())
      return (*names)[static_cast<std::size_t>(p)];
    return fmt::format("#{}", p);
  };
  std::string out;
  out += fn.is_gradient ? "gradient kernel(" : "kernel(";
  for (std::size_t p = 0; p < fn.params.size(); ++p)
    out += fmt::format("{}{}: {}", p ? ", " : "", param(static_cast<std::int32_t>(p)), describe(fn.params[p]));
  out += ")\n";
  auto indices = [&](const node& n) {
    std::string s;
    for (std::int32_t k = 0; k < n.list_size; ++k) s += fmt::format("{}{}", k ? ", " : "", ref(fn.list(n, k)));
    return s;
  };
  auto place = [&](const node& n) {
    return fmt::format("{}{}[{}]{}", param(n.param), (n.flags & access::grad) ? ".grad" : "", indices(n),
                       (n.flags & access::clamp) ? " clamp" : "");
  };
  auto expected = [&](const node& n) { return n.c == none ? std::string() : " if " + ref(n.c); };  // cas
  source_loc last{};  // a node's location is printed when it differs from the previous one
  auto print_block = [&](auto& self, std::int32_t block, int depth) -> void {
    for (id i : fn.block(block)) {
      const node& n = fn.at(i);
      std::string line = std::string(static_cast<std::size_t>(depth) * 2, ' ');
      const source_loc where = fn.location(i);
      std::string at;
      if (options.locations && where.known() && !(where == last)) at = "  @ " + to_text(where);
      if (where.known()) last = where;
      line += fmt::format("{}{} {} {}", ref(i), has_value(n.code) ? " =" : ":", name(n.code), name(n.type));
      switch (n.code) {
        case op::constant: line += " " + detail::constant_text(n); break;
        case op::arg: line += " " + param(n.param); break;
        case op::shape: line += fmt::format(" {} dim {}", param(n.param), n.imm); break;
        case op::unary: line += fmt::format(" {} {}", name(static_cast<unary_op>(n.sub)), ref(n.a)); break;
        case op::binary:
          line += fmt::format(" {} {}, {}", name(static_cast<binary_op>(n.sub)), ref(n.a), ref(n.b));
          break;
        case op::global_load: line += " " + place(n) + ((n.flags & access::is_volatile) ? " volatile" : ""); break;
        case op::global_store: line += " " + place(n) + " <- " + ref(n.a); break;
        case op::global_atomic:
          line += fmt::format(" {} {} <- {}{}{}", name(static_cast<atomic_op>(n.sub)), place(n), ref(n.a), expected(n),
                              (n.flags & access::owned) ? " owned" : "");
          break;
        case op::local_atomic:
          line += fmt::format(" {} {} <- {}{}", name(static_cast<atomic_op>(n.sub)), ref(n.a), ref(n.b), expected(n));
          break;
        case op::local_array: line += fmt::format(" [{}]", n.imm); break;
        case op::array_load: line += fmt::format(" {}[{}]", ref(n.a), ref(n.b)); break;
        case op::array_store: line += fmt::format(" {}[{}] <- {}", ref(n.a), ref(n.b), ref(n.c)); break;
        case op::temp_load: line += fmt::format(" slot {}", n.imm); break;
        case op::temp_store: line += fmt::format(" slot {} <- {}", n.imm, ref(n.a)); break;
        case op::temp_atomic:
          line += fmt::format(" {} slot {} <- {}{}", name(static_cast<atomic_op>(n.sub)), n.imm, ref(n.a), expected(n));
          break;
        case op::print:
          if (n.flags & print_flags::assertion) line += fmt::format(" assertion #{} failed:", n.imm);
          for (std::int32_t k = 0; k < n.list_size; ++k) {
            std::int32_t item = fn.list(n, k);
            line += is_text(item) ? fmt::format(" \"{}\"", fn.strings[static_cast<std::size_t>(text_index(item))])
                                  : " " + ref(item);
          }
          break;
        case op::while_: break;  // its condition value is shown inside the condition block
        case op::graph_mark:
          line += fmt::format(" {}", name(mark_of(n)));
          if (mark_of(n) == graph_mark::loop_begin) line += " flag " + param(n.param);
          if (mark_of(n) == graph_mark::fork_begin) line += fmt::format(" {}", name(static_cast<fork_kind>(n.imm)));
          break;
        case op::range_for:
          if (n.imm == 1)
            line += fmt::format(" {} .. {}", ref(n.a), ref(n.b));
          else
            line += fmt::format(" ndrange({})", indices(n));
          if (n.flags & loop::serialize) line += " serialize";
          if (n.param > 0) line += fmt::format(" block_dim {}", n.param);
          break;
        case op::loop_index: line += fmt::format(" {} dim {}", ref(n.a), n.imm); break;
        case op::bound: line += fmt::format(" {} else {}", ref(n.a), n.imm); break;
        case op::break_:
        case op::continue_: line += " " + ref(n.a); break;
        case op::select:
        case op::fma:
        case op::cast:
        case op::local_decl:
        case op::local_load:
        case op::local_store:
        case op::if_:
        case op::random:
          for (id operand : {n.a, n.b, n.c})
            if (operand != none) line += " " + ref(operand);
          break;
      }
      std::string pad(static_cast<std::size_t>(depth) * 2, ' ');
      if (n.code == op::while_) {
        out += line + fmt::format(" condition {} {{", ref(n.a)) + at + "\n";
        self(self, n.block0, depth + 1);
        out += pad + "} do {\n";
        self(self, n.block1, depth + 1);
        out += pad + "}\n";
      } else if (n.block0 >= 0) {
        out += line + " {" + at + "\n";
        self(self, n.block0, depth + 1);
        if (n.block1 >= 0 && !fn.block(n.block1).empty()) {
          out += pad + "} else {\n";
          self(self, n.block1, depth + 1);
        }
        out += pad + "}\n";
      } else {
        out += line + at + "\n";
      }
    }
  };
  print_block(print_block, 0, 0);
  return out;
}

}  // namespace qd::inline v0::ir
