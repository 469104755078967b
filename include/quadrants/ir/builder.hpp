// Appends nodes to an ir::function at an insertion block, validating operands.
// Used by the tracer (lang) and by lowering; constexpr so tests can build IR by hand.
#pragma once

#include <bit>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

#include "quadrants/ir/node.hpp"

namespace qd::inline v0::ir {

class builder {
 public:
  constexpr explicit builder(function& fn) : fn_(&fn) {
    if (fn_->blocks.empty()) {
      fn_->blocks.emplace_back();
      fn_->block_owner.push_back(none);
    }
    stack_.push_back(0);
  }

  constexpr function& fn() { return *fn_; }
  constexpr std::int32_t current_block() const { return stack_.back(); }
  constexpr std::size_t depth() const { return stack_.size() - 1; }
  constexpr void push_block(std::int32_t b) { stack_.push_back(b); }
  constexpr void pop_block() { stack_.pop_back(); }

  constexpr std::int32_t new_block(id owner) {
    fn_->blocks.emplace_back();
    fn_->block_owner.push_back(owner);
    return static_cast<std::int32_t>(fn_->blocks.size() - 1);
  }

  // The source location recorded for the nodes emitted from now on.
  constexpr void set_location(source_loc l) {
    if (l.file == loc_.file && l.line == loc_.line) return;
    loc_ = l;
    const auto next = static_cast<std::int32_t>(fn_->nodes.size());
    if (!fn_->locs.empty() && fn_->locs.back().first == next)
      fn_->locs.back().loc = l;
    else
      fn_->locs.push_back({next, l});
  }
  constexpr source_loc location() const { return loc_; }

  // Appends `n` to the current block and returns its id.
  constexpr id emit(node n) {
    id i = static_cast<id>(fn_->nodes.size());
    fn_->nodes.push_back(n);
    fn_->node_block.push_back(current_block());
    fn_->blocks[static_cast<std::size_t>(current_block())].push_back(i);
    return i;
  }

  constexpr std::int32_t add_list(std::initializer_list<std::int32_t> items) {
    return add_list(items.begin(), items.end());
  }
  template <class It>
  constexpr std::int32_t add_list(It first, It last) {
    auto begin = static_cast<std::int32_t>(fn_->lists.size());
    for (; first != last; ++first) fn_->lists.push_back(*first);
    return begin;
  }

  constexpr std::int32_t add_param(param_desc p) {
    fn_->params.push_back(p);
    return static_cast<std::int32_t>(fn_->params.size() - 1);
  }

  // --- expressions ---------------------------------------------------------
  constexpr id constant_bits(dtype t, std::int64_t bits) {
    return emit({.code = op::constant, .type = t, .imm = bits});
  }
  constexpr id constant_int(dtype t, std::int64_t v) { return constant_bits(t, v); }
  constexpr id constant_float(dtype t, double v) {
    if (t == dtype::f16) return constant_bits(t, half(v).bits);  // rounded once, from the double
    return constant_bits(t, t == dtype::f32
                                ? static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(static_cast<float>(v)))
                                : std::bit_cast<std::int64_t>(v));
  }
  constexpr id arg(std::int32_t param) {
    return emit({.code = op::arg, .type = fn_->params[static_cast<std::size_t>(param)].type, .param = param});
  }
  constexpr id shape(std::int32_t param, std::int32_t dim) {
    return emit({.code = op::shape, .type = dtype::i32, .param = param, .imm = dim});
  }
  constexpr id unary(unary_op o, dtype t, id a) {
    return emit({.code = op::unary, .type = t, .sub = static_cast<std::uint8_t>(o), .a = a});
  }
  constexpr id binary(binary_op o, dtype t, id a, id b) {
    return emit({.code = op::binary, .type = t, .sub = static_cast<std::uint8_t>(o), .a = a, .b = b});
  }
  constexpr id select(dtype t, id c, id a, id b) {
    return emit({.code = op::select, .type = t, .a = c, .b = a, .c = b});
  }
  constexpr id fma(dtype t, id a, id b, id c) { return emit({.code = op::fma, .type = t, .a = a, .b = b, .c = c}); }
  constexpr id cast(dtype t, id a) { return emit({.code = op::cast, .type = t, .a = a}); }
  constexpr id bound(id a, std::int64_t on_overflow) {
    return emit({.code = op::bound, .type = dtype::i32, .a = a, .imm = on_overflow});
  }
  constexpr id random(dtype t) { return emit({.code = op::random, .type = t}); }

  // --- memory --------------------------------------------------------------
  template <class Ids>
  constexpr id global_load(std::int32_t param, std::uint8_t flags, const Ids& indices) {
    auto begin = add_list(std::begin(indices), std::end(indices));
    return emit({.code = op::global_load,
                 .type = fn_->params[static_cast<std::size_t>(param)].type,
                 .flags = flags,
                 .param = param,
                 .list_begin = begin,
                 .list_size = static_cast<std::int32_t>(std::size(indices))});
  }
  template <class Ids>
  constexpr id global_store(std::int32_t param, std::uint8_t flags, const Ids& indices, id value) {
    auto begin = add_list(std::begin(indices), std::end(indices));
    return emit({.code = op::global_store,
                 .type = fn_->params[static_cast<std::size_t>(param)].type,
                 .flags = flags,
                 .a = value,
                 .param = param,
                 .list_begin = begin,
                 .list_size = static_cast<std::int32_t>(std::size(indices))});
  }
  template <class Ids>
  constexpr id global_atomic(atomic_op o, std::int32_t param, std::uint8_t flags, const Ids& indices, id value,
                             id expected = none) {
    auto begin = add_list(std::begin(indices), std::end(indices));
    return emit({.code = op::global_atomic,
                 .type = fn_->params[static_cast<std::size_t>(param)].type,
                 .sub = static_cast<std::uint8_t>(o),
                 .flags = flags,
                 .a = value,
                 .c = expected,
                 .param = param,
                 .list_begin = begin,
                 .list_size = static_cast<std::int32_t>(std::size(indices))});
  }
  constexpr id local_decl(dtype t, id init) { return emit({.code = op::local_decl, .type = t, .a = init}); }
  constexpr id local_load(id decl) { return emit({.code = op::local_load, .type = fn_->at(decl).type, .a = decl}); }
  constexpr id local_store(id decl, id value) {
    return emit({.code = op::local_store, .type = fn_->at(decl).type, .a = decl, .b = value});
  }
  constexpr id local_atomic(atomic_op o, id decl, id value, id expected = none) {
    return emit({.code = op::local_atomic,
                 .type = fn_->at(decl).type,
                 .sub = static_cast<std::uint8_t>(o),
                 .a = decl,
                 .b = value,
                 .c = expected});
  }
  constexpr id local_array(dtype t, std::int64_t length) {
    return emit({.code = op::local_array, .type = t, .imm = length});
  }
  constexpr id array_load(id array, id index) {
    return emit({.code = op::array_load, .type = fn_->at(array).type, .a = array, .b = index});
  }
  constexpr id array_store(id array, id index, id value) {
    return emit({.code = op::array_store, .type = fn_->at(array).type, .a = array, .b = index, .c = value});
  }
  constexpr id temp_load(dtype t, std::int64_t slot) { return emit({.code = op::temp_load, .type = t, .imm = slot}); }
  constexpr id temp_store(dtype t, std::int64_t slot, id value) {
    return emit({.code = op::temp_store, .type = t, .a = value, .imm = slot});
  }
  constexpr id temp_atomic(atomic_op o, dtype t, std::int64_t slot, id value, id expected = none) {
    return emit({.code = op::temp_atomic,
                 .type = t,
                 .sub = static_cast<std::uint8_t>(o),
                 .a = value,
                 .c = expected,
                 .imm = slot});
  }

  // --- control flow: returns the node; its blocks are created empty --------
  constexpr id range_for(id begin, id end) {
    id n = emit({.code = op::range_for, .type = dtype::i32, .a = begin, .b = end, .imm = 1});
    add_loop_indices(n, 1);
    return n;
  }
  // A rank-N iteration space [0, e0) x ... x [0, eN-1), row-major.
  template <class Ids>
  constexpr id range_for_nd(const Ids& extents) {
    auto rank = static_cast<std::int32_t>(std::size(extents));
    auto begin = add_list(std::begin(extents), std::end(extents));
    id n = emit({.code = op::range_for, .type = dtype::i32, .list_begin = begin, .list_size = rank, .imm = rank});
    add_loop_indices(n, rank);
    return n;
  }
  constexpr id loop_index_of(id loop, std::int32_t dim = 0) const {
    return fn_->block(fn_->at(loop).block0)[static_cast<std::size_t>(dim)];
  }
  constexpr id if_(id cond) {
    id n = emit({.code = op::if_, .type = dtype::boolean, .a = cond});
    fn_->at(n).block0 = new_block(n);
    fn_->at(n).block1 = new_block(n);
    return n;
  }
  constexpr id while_() {
    id n = emit({.code = op::while_, .type = dtype::boolean});
    fn_->at(n).block0 = new_block(n);
    fn_->at(n).block1 = new_block(n);
    return n;
  }
  // break_ or continue_ of `loop`.
  constexpr id jump(op code, id loop) { return emit({.code = code, .a = loop}); }
  constexpr id print(const std::vector<std::int32_t>& args) {
    auto begin = add_list(args.begin(), args.end());
    return emit({.code = op::print, .list_begin = begin, .list_size = static_cast<std::int32_t>(args.size())});
  }
  constexpr std::int32_t add_string(std::string s) {
    fn_->strings.push_back(std::move(s));
    return encode_text(static_cast<std::int32_t>(fn_->strings.size() - 1));
  }

 private:
  function* fn_;
  constexpr void add_loop_indices(id loop, std::int32_t rank) {
    fn_->at(loop).block0 = new_block(loop);
    push_block(fn_->at(loop).block0);
    for (std::int32_t d = 0; d < rank; ++d) emit({.code = op::loop_index, .type = dtype::i32, .a = loop, .imm = d});
    pop_block();
  }
  std::vector<std::int32_t> stack_;
  source_loc loc_{};
};

}  // namespace qd::inline v0::ir
