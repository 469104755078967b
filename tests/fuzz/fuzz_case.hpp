// A fuzz case: a kernel as hand-built IR plus everything one call needs (buffers,
// their contents, which parameter each binds, scalar values), and its text file form.
// The bodies under QD_FUZZ_IMPLEMENTATION are compiled once, in fuzz_support.cpp (the
// library qd_fuzz_support); other translation units see their declarations only.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <quadrants/ir/builder.hpp>
#include <quadrants/ir/printer.hpp>

namespace qd_fuzz {

// One array the call passes (a qd::ndarray): several parameters may bind it.
struct buffer_spec {
  qd::dtype type = qd::dtype::f32;
  int ndim = 1;
  std::array<std::int64_t, 4> shape{1, 1, 1, 1};
  bool grad = false;
  std::vector<unsigned char> data, grad_data;  // initial contents, row-major

  std::int64_t elements() const {
    std::int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[static_cast<std::size_t>(d)];
    return n;
  }
  std::size_t bytes() const { return static_cast<std::size_t>(elements() * qd::size_of(type)); }
};

struct fuzz_case {
  std::string name = "fuzz";
  qd::ir::function fn;
  std::vector<std::int32_t> buffer_of;     // per parameter: the buffer it binds, or -1 for a scalar
  std::vector<std::uint64_t> scalar_bits;  // per parameter: a scalar's value in the low bytes
  std::vector<buffer_spec> buffers;
  std::uint64_t random_seed = 0;
  int launches = 1;  // the call is repeated (global temporaries and random streams across launches)
  std::string note;  // where the case came from (seed, what it showed)
  // 0: the parameters are passed one by one; else which fixed struct type of
  // differential.hpp (struct_cases) groups all of them into one aggregate argument.
  int struct_kind = 0;
  std::uint32_t features = 0;  // what the generator used (feature bits below; not in the file form)

  bool aliased() const {
    for (std::size_t p = 0; p < buffer_of.size(); ++p)
      for (std::size_t q = p + 1; q < buffer_of.size(); ++q)
        if (buffer_of[p] >= 0 && buffer_of[p] == buffer_of[q]) return true;
    return false;
  }
};

// What a generated kernel uses beyond the first wave's statements (counted per batch).
namespace feature {
inline constexpr std::uint32_t vectors = 1;        // qd::vec values reduced to scalars
inline constexpr std::uint32_t matrices = 2;       // qd::mat values
inline constexpr std::uint32_t vector_arrays = 4;  // arrays of vectors or matrices, per-component access
inline constexpr std::uint32_t struct_args = 8;    // arguments grouped in a struct parameter
inline constexpr std::uint32_t returns = 16;       // a returned scalar, vector or tuple
inline constexpr std::uint32_t break_ = 32;        // qd::break_()
inline constexpr std::uint32_t continue_ = 64;     // qd::continue_()
inline constexpr std::uint32_t loop_config = 128;  // qd::loop_config on a top-level loop
inline constexpr std::uint32_t serialized = 256;   // ... with .serialize = true
inline constexpr std::uint32_t vector_vars = 512;  // qd::var<qd::vec3f>, reductions into it per component
// The third wave (SPEC §13.1-§13.4):
inline constexpr std::uint32_t math = 1024;           // tan, asin, ..., atan2, fmod, floordiv, isnan, popcnt, ...
inline constexpr std::uint32_t atomics = 2048;        // atomic mul, and/or/xor, exchange, cas
inline constexpr std::uint32_t narrow_types = 4096;   // arrays of f16, i8, i16, u16, u64
inline constexpr std::uint32_t short_circuit = 8192;  // && / || whose right operand reads memory
inline constexpr int count = 14;
inline constexpr int second_wave_count = 10;  // bits [0, 10): SPEC §11; [10, 14): the third wave
inline const char* name(int bit) {
  static const char* names[count] = {
      "vectors",         "matrices",           "vector/matrix arrays", "struct arguments",     "return values",
      "break_",          "continue_",          "loop_config",          "serialized loops",     "vector variables",
      "third-wave math", "third-wave atomics", "narrow types",         "short-circuit && / ||"};
  return bit >= 0 && bit < count ? names[bit] : "?";
}
}  // namespace feature

// --- the text form (tests/fuzz/regressions/*.qdfuzz) ---------------------------------
// Line-oriented; enumerators by name so the files survive reordering of the enums.

namespace detail {

inline std::string hex(const std::vector<unsigned char>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s.empty() ? "-" : s;
}

inline std::vector<unsigned char> unhex(const std::string& s) {
  std::vector<unsigned char> out;
  if (s == "-") return out;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::runtime_error("qdfuzz: bad hex digit");
  };
  if (s.size() % 2) throw std::runtime_error("qdfuzz: odd hex length");
  for (std::size_t i = 0; i < s.size(); i += 2)
    out.push_back(static_cast<unsigned char>(nibble(s[i]) * 16 + nibble(s[i + 1])));
  return out;
}

inline qd::dtype dtype_named(const std::string& s) {
  for (int t = 0; t < qd::dtype_count; ++t)
    if (qd::name(static_cast<qd::dtype>(t)) == s) return static_cast<qd::dtype>(t);
  throw std::runtime_error("qdfuzz: unknown dtype " + s);
}

inline qd::ir::op op_named(const std::string& s) {
  for (int o = 0; o < static_cast<int>(qd::ir::op_count); ++o)
    if (qd::ir::name(static_cast<qd::ir::op>(o)) == s) return static_cast<qd::ir::op>(o);
  throw std::runtime_error("qdfuzz: unknown op " + s);
}

inline std::string sub_name(const qd::ir::node& n) {
  switch (n.code) {
    case qd::ir::op::unary: return std::string(qd::ir::name(static_cast<qd::ir::unary_op>(n.sub)));
    case qd::ir::op::binary: return std::string(qd::ir::name(static_cast<qd::ir::binary_op>(n.sub)));
    case qd::ir::op::global_atomic:
    case qd::ir::op::local_atomic:
    case qd::ir::op::temp_atomic: return std::string(qd::ir::name(static_cast<qd::ir::atomic_op>(n.sub)));
    case qd::ir::op::arg:
    case qd::ir::op::bound:
    case qd::ir::op::cast:
    case qd::ir::op::constant:
    case qd::ir::op::fma:
    case qd::ir::op::global_load:
    case qd::ir::op::global_store:
    case qd::ir::op::if_:
    case qd::ir::op::local_decl:
    case qd::ir::op::local_load:
    case qd::ir::op::local_store:
    case qd::ir::op::local_array:
    case qd::ir::op::array_load:
    case qd::ir::op::array_store:
    case qd::ir::op::loop_index:
    case qd::ir::op::print:
    case qd::ir::op::random:
    case qd::ir::op::range_for:
    case qd::ir::op::select:
    case qd::ir::op::shape:
    case qd::ir::op::temp_load:
    case qd::ir::op::temp_store:
    case qd::ir::op::break_:
    case qd::ir::op::continue_:
    case qd::ir::op::graph_mark:
    case qd::ir::op::while_: return std::to_string(n.sub);
  }
  return std::to_string(n.sub);
}

inline std::uint8_t sub_named(qd::ir::op code, const std::string& s) {
  auto find = [&](int count, auto namer) -> std::uint8_t {
    for (int v = 0; v < count; ++v)
      if (namer(v) == s) return static_cast<std::uint8_t>(v);
    throw std::runtime_error("qdfuzz: unknown sub-op " + s);
  };
  switch (code) {
    case qd::ir::op::unary:
      return find(qd::ir::unary_op_count, [](int o) { return qd::ir::name(static_cast<qd::ir::unary_op>(o)); });
    case qd::ir::op::binary:
      return find(qd::ir::binary_op_count, [](int o) { return qd::ir::name(static_cast<qd::ir::binary_op>(o)); });
    case qd::ir::op::global_atomic:
    case qd::ir::op::local_atomic:
    case qd::ir::op::temp_atomic:
      return find(qd::ir::atomic_op_count, [](int o) { return qd::ir::name(static_cast<qd::ir::atomic_op>(o)); });
    case qd::ir::op::arg:
    case qd::ir::op::bound:
    case qd::ir::op::cast:
    case qd::ir::op::constant:
    case qd::ir::op::fma:
    case qd::ir::op::global_load:
    case qd::ir::op::global_store:
    case qd::ir::op::if_:
    case qd::ir::op::local_decl:
    case qd::ir::op::local_load:
    case qd::ir::op::local_store:
    case qd::ir::op::local_array:
    case qd::ir::op::array_load:
    case qd::ir::op::array_store:
    case qd::ir::op::loop_index:
    case qd::ir::op::print:
    case qd::ir::op::random:
    case qd::ir::op::range_for:
    case qd::ir::op::select:
    case qd::ir::op::shape:
    case qd::ir::op::temp_load:
    case qd::ir::op::temp_store:
    case qd::ir::op::break_:
    case qd::ir::op::continue_:
    case qd::ir::op::graph_mark:
    case qd::ir::op::while_: return static_cast<std::uint8_t>(std::stoi(s));
  }
  return static_cast<std::uint8_t>(std::stoi(s));
}

}  // namespace detail

std::string to_file_text(const fuzz_case& c);
#if defined(QD_FUZZ_IMPLEMENTATION)
std::string to_file_text(const fuzz_case& c) {
  std::ostringstream out;
  out << "# A kernel found by the differential fuzzer (tests/fuzz, docs/testing.md); replayed by fuzz/regressions.\n";
  std::istringstream note(c.note);
  for (std::string line; std::getline(note, line);) out << "# " << line << "\n";
  std::istringstream ir(qd::ir::to_text(c.fn));
  for (std::string line; std::getline(ir, line);) out << "#   " << line << "\n";
  out << "qdfuzz 1\n";
  out << "name " << c.name << "\n";
  out << "random_seed " << c.random_seed << "\n";
  out << "launches " << c.launches << "\n";
  out << "gradient_kernel " << (c.fn.is_gradient ? 1 : 0) << "\n";
  if (c.struct_kind) out << "struct_kind " << c.struct_kind << "\n";
  for (std::size_t p = 0; p < c.fn.params.size(); ++p) {
    const auto& d = c.fn.params[p];
    out << "param " << (d.is_array ? "array" : "scalar") << " " << qd::name(d.type) << " " << d.ndim << " "
        << (d.needs_grad ? 1 : 0) << " " << c.buffer_of[p] << " " << c.scalar_bits[p] << "\n";
  }
  for (std::size_t b = 0; b < c.buffers.size(); ++b) {
    const auto& s = c.buffers[b];
    out << "buffer " << qd::name(s.type) << " " << s.ndim;
    for (auto e : s.shape) out << " " << e;
    out << " " << (s.grad ? 1 : 0) << " " << detail::hex(s.data) << " " << detail::hex(s.grad_data) << "\n";
  }
  for (const auto& n : c.fn.nodes)
    out << "node " << qd::ir::name(n.code) << " " << qd::name(n.type) << " " << detail::sub_name(n) << " "
        << int(n.flags) << " " << n.a << " " << n.b << " " << n.c << " " << n.param << " " << n.list_begin << " "
        << n.list_size << " " << n.block0 << " " << n.block1 << " " << n.imm << "\n";
  for (std::size_t b = 0; b < c.fn.blocks.size(); ++b) {
    out << "block " << c.fn.block_owner[b];
    for (auto i : c.fn.blocks[b]) out << " " << i;
    out << "\n";
  }
  out << "node_blocks";
  for (auto b : c.fn.node_block) out << " " << b;
  out << "\n";
  out << "lists";
  for (auto i : c.fn.lists) out << " " << i;
  out << "\n";
  for (const auto& s : c.fn.strings)
    out << "string " << detail::hex(std::vector<unsigned char>(s.begin(), s.end())) << "\n";
  out << "end\n";
  return out.str();
}
#endif

fuzz_case from_file_text(const std::string& text);
#if defined(QD_FUZZ_IMPLEMENTATION)
fuzz_case from_file_text(const std::string& text) {
  fuzz_case c;
  std::istringstream in(text);
  bool header = false, ended = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string tag;
    f >> tag;
    if (tag == "qdfuzz") {
      int version = 0;
      f >> version;
      if (version != 1) throw std::runtime_error("qdfuzz: unknown version");
      header = true;
    } else if (tag == "name") {
      f >> c.name;
    } else if (tag == "random_seed") {
      f >> c.random_seed;
    } else if (tag == "launches") {
      f >> c.launches;
    } else if (tag == "gradient_kernel") {
      int g = 0;
      f >> g;
      c.fn.is_gradient = g != 0;
    } else if (tag == "struct_kind") {
      f >> c.struct_kind;
    } else if (tag == "param") {
      std::string kind, type;
      qd::ir::param_desc d;
      int grad = 0;
      std::int32_t buffer = -1;
      std::uint64_t bits = 0;
      f >> kind >> type >> d.ndim >> grad >> buffer >> bits;
      d.is_array = kind == "array";
      d.type = detail::dtype_named(type);
      d.needs_grad = grad != 0;
      c.fn.params.push_back(d);
      c.buffer_of.push_back(buffer);
      c.scalar_bits.push_back(bits);
    } else if (tag == "buffer") {
      buffer_spec s;
      std::string type, data, grad_data;
      int grad = 0;
      f >> type >> s.ndim >> s.shape[0] >> s.shape[1] >> s.shape[2] >> s.shape[3] >> grad >> data >> grad_data;
      s.type = detail::dtype_named(type);
      s.grad = grad != 0;
      s.data = detail::unhex(data);
      s.grad_data = detail::unhex(grad_data);
      c.buffers.push_back(std::move(s));
    } else if (tag == "node") {
      std::string code, type, sub;
      int flags = 0;
      qd::ir::node n;
      f >> code >> type >> sub >> flags >> n.a >> n.b >> n.c >> n.param >> n.list_begin >> n.list_size >> n.block0 >>
          n.block1 >> n.imm;
      n.code = detail::op_named(code);
      n.type = detail::dtype_named(type);
      n.sub = detail::sub_named(n.code, sub);
      n.flags = static_cast<std::uint8_t>(flags);
      c.fn.nodes.push_back(n);
    } else if (tag == "block") {
      qd::ir::id owner = 0;
      f >> owner;
      c.fn.block_owner.push_back(owner);
      c.fn.blocks.emplace_back();
      for (qd::ir::id i; f >> i;) c.fn.blocks.back().push_back(i);
    } else if (tag == "node_blocks") {
      for (std::int32_t b; f >> b;) c.fn.node_block.push_back(b);
    } else if (tag == "lists") {
      for (std::int32_t i; f >> i;) c.fn.lists.push_back(i);
    } else if (tag == "string") {
      std::string h;
      f >> h;
      auto bytes = detail::unhex(h);
      c.fn.strings.emplace_back(bytes.begin(), bytes.end());
    } else if (tag == "end") {
      ended = true;
    } else {
      throw std::runtime_error("qdfuzz: unknown line '" + line + "'");
    }
    if (f.fail() && tag != "block" && tag != "lists" && tag != "node_blocks")
      throw std::runtime_error("qdfuzz: malformed line '" + line + "'");
  }
  if (!header || !ended) throw std::runtime_error("qdfuzz: missing header or end");
  if (c.fn.node_block.size() != c.fn.nodes.size())
    throw std::runtime_error("qdfuzz: node_blocks does not match the nodes");
  return c;
}
#endif

// The cases saved in `dir` (*.qdfuzz), by file name, in name order.
std::vector<std::pair<std::string, fuzz_case>> saved_cases(const std::string& dir);
#if defined(QD_FUZZ_IMPLEMENTATION)
std::vector<std::pair<std::string, fuzz_case>> saved_cases(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".qdfuzz") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, fuzz_case>> out;
  for (const auto& path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    out.emplace_back(path.filename().string(), from_file_text(text.str()));
  }
  return out;
}
#endif

}  // namespace qd_fuzz
