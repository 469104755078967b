#include "core/kernel_scan.hpp"

#include <cctype>

namespace qd::emulation {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A cursor over the text that steps over string and character literals and comments.
class cursor {
 public:
  explicit cursor(std::string_view s, std::size_t at = 0) : s_(s), p_(at) {}
  bool done() const { return p_ >= s_.size(); }
  std::size_t at() const { return p_; }
  char peek(std::size_t k = 0) const { return p_ + k < s_.size() ? s_[p_ + k] : '\0'; }

  // Whitespace, comments and preprocessor lines (line markers, #pragma).
  void skip_space() {
    while (!done()) {
      const char c = s_[p_];
      if (c == '\n') {
        ++p_;
        std::size_t q = p_;
        while (q < s_.size() && (s_[q] == ' ' || s_[q] == '\t')) ++q;
        if (q < s_.size() && s_[q] == '#') p_ = line_end(q);
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++p_;
      } else if (c == '/' && peek(1) == '/') {
        p_ = line_end(p_);
      } else if (c == '/' && peek(1) == '*') {
        const std::size_t e = s_.find("*/", p_ + 2);
        p_ = e == std::string_view::npos ? s_.size() : e + 2;
      } else if (c == '#' && (p_ == 0 || s_[p_ - 1] == '\n')) {
        p_ = line_end(p_);
      } else {
        return;
      }
    }
  }

  // An identifier at the cursor (empty if none), consumed.
  std::string_view ident() {
    if (done() || !ident_start(s_[p_])) return {};
    const std::size_t b = p_;
    while (!done() && ident_char(s_[p_])) ++p_;
    return s_.substr(b, p_ - b);
  }

  // Steps over one token that is not an identifier: a literal, or one character.
  void skip_token() {
    const char c = s_[p_];
    if (c == '"' || c == '\'') {
      skip_quoted(c);
    } else if (c == 'R' && peek(1) == '"') {
      skip_raw_string();
    } else {
      ++p_;
    }
  }

  // At an opening bracket: the text inside the balanced pair, the cursor after it.
  // Angle brackets nest only when `angles` (template arguments, not comparisons).
  bool balanced(std::string_view& inside, bool angles = false) {
    const char open = s_[p_];
    const std::size_t b = ++p_;
    int depth = 1;
    while (!done()) {
      skip_space();
      if (done()) break;
      const char c = s_[p_];
      if (c == '"' || c == '\'' || (c == 'R' && peek(1) == '"')) {
        skip_token();
        continue;
      }
      if (ident_start(c)) {
        ident();
        continue;
      }
      if (c == '(' || c == '[' || c == '{' || (angles && c == '<')) ++depth;
      if (c == ')' || c == ']' || c == '}' || (angles && c == '>')) --depth;
      ++p_;
      if (depth == 0) {
        inside = s_.substr(b, p_ - 1 - b);
        return open == '(' || open == '[' || open == '{' || open == '<';
      }
    }
    return false;
  }

 private:
  std::size_t line_end(std::size_t q) const {
    const std::size_t e = s_.find('\n', q);
    return e == std::string_view::npos ? s_.size() : e;
  }
  void skip_quoted(char quote) {
    ++p_;
    while (!done() && s_[p_] != quote && s_[p_] != '\n') p_ += s_[p_] == '\\' ? 2 : 1;
    if (!done()) ++p_;
  }
  void skip_raw_string() {
    const std::size_t open = s_.find('(', p_);
    if (open == std::string_view::npos) {
      p_ = s_.size();
      return;
    }
    std::string close(1, ')');
    close.append(s_.substr(p_ + 2, open - p_ - 2));
    close.push_back('"');
    const std::size_t e = s_.find(close, open);
    p_ = e == std::string_view::npos ? s_.size() : e + close.size();
  }

  std::string_view s_;
  std::size_t p_;
};

std::string trimmed(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// The top-level comma-separated items of a bracket's contents.
std::vector<std::string> split_top_level(std::string_view inside) {
  std::vector<std::string> items;
  cursor c(inside);
  std::size_t start = 0;
  while (true) {
    c.skip_space();
    if (c.done()) break;
    const char ch = c.peek();
    std::string_view ignored;
    if (ch == '(' || ch == '[' || ch == '{' || ch == '<') {
      c.balanced(ignored, true);
    } else if (ch == ',') {
      items.push_back(trimmed(inside.substr(start, c.at() - start)));
      c.skip_token();
      start = c.at();
    } else if (ident_start(ch) && !(ch == 'R' && c.peek(1) == '"')) {
      c.ident();
    } else {
      c.skip_token();
    }
  }
  std::string last = trimmed(inside.substr(start));
  if (!last.empty() || !items.empty()) items.push_back(last);
  return items;
}

// Whether the declaration that `__global__` at `at` belongs to starts with a template header.
bool is_template(std::string_view s, std::size_t at) {
  std::size_t q = at;
  for (int tokens = 0; tokens < 8; ++tokens) {
    while (q > 0 && std::isspace(static_cast<unsigned char>(s[q - 1]))) --q;
    if (q == 0) return false;
    const char c = s[q - 1];
    if (c == '>') return true;
    if (c == '"') {  // extern "C"
      const std::size_t open = s.rfind('"', q - 2);
      if (open == std::string_view::npos) return false;
      q = open;
      continue;
    }
    if (!ident_char(c)) return false;
    std::size_t b = q;
    while (b > 0 && ident_char(s[b - 1])) --b;
    const std::string_view word = s.substr(b, q - b);
    if (word != "extern" && word != "static" && word != "inline" && word != "__inline__") return false;
    q = b;
  }
  return false;
}

}  // namespace

kernel_scan scan_kernels(std::string_view text) {
  kernel_scan out;
  // Anywhere, kernel bodies included (a false hit in a string literal only costs fibers).
  for (std::size_t at = text.find("__syncthreads"); at != std::string_view::npos && !out.synchronizes;
       at = text.find("__syncthreads", at + 1))
    out.synchronizes = at == 0 || !ident_char(text[at - 1]);
  cursor c(text);
  while (true) {
    c.skip_space();
    if (c.done()) break;
    if (!ident_start(c.peek()) || (c.peek() == 'R' && c.peek(1) == '"')) {
      c.skip_token();
      continue;
    }
    const std::size_t word_at = c.at();
    const std::string_view word = c.ident();
    if (word != "__global__") continue;

    // The declarator: attributes, the return type, the (qualified) name, the parameters.
    kernel_definition k;
    std::string current;  // the (qualified) name being read
    bool after_colons = false;
    std::string_view params;
    bool have_params = false;
    while (!have_params) {
      c.skip_space();
      if (c.done()) break;
      const char ch = c.peek();
      std::string_view inside;
      if (ident_start(ch)) {
        const std::string_view id = c.ident();
        if (id == "__launch_bounds__" || id == "__attribute__" || id == "__declspec" || id == "alignas") {
          c.skip_space();
          if (c.peek() == '(' && c.balanced(inside) && id == "__launch_bounds__") {
            const auto args = split_top_level(inside);
            if (!args.empty()) k.max_threads = args[0];
          }
          continue;
        }
        current = after_colons ? current + std::string(id) : std::string(id);
        after_colons = false;
      } else if (ch == ':' && c.peek(1) == ':') {
        current += "::";
        after_colons = true;
        c.skip_token();
        c.skip_token();
      } else if (ch == '<') {
        c.balanced(inside, true);
      } else if (ch == '[' && c.peek(1) == '[') {
        c.balanced(inside);
      } else if (ch == '*' || ch == '&') {
        current.clear();
        c.skip_token();
      } else if (ch == '(') {
        if (!c.balanced(params)) break;
        k.name = current;
        have_params = true;
      } else {
        break;
      }
    }
    if (!have_params || k.name.empty()) continue;  // not a function declarator we understand
    // After the parameters: qualifiers or attributes, then a body or a semicolon.
    bool is_definition = false;
    while (true) {
      c.skip_space();
      if (c.done()) break;
      const char ch = c.peek();
      std::string_view inside;
      if (ch == '{') {
        is_definition = true;
        break;
      }
      if (ch == ';' || ch == ',' || ch == '=') break;
      if (ident_start(ch)) {
        c.ident();
      } else if (ch == '(' || (ch == '[' && c.peek(1) == '[')) {
        c.balanced(inside);
      } else {
        c.skip_token();
      }
    }
    if (!is_definition) continue;
    std::string_view body;
    if (!c.balanced(body)) {
      out.error = "the definition of kernel '" + k.name + "' never ends";
      break;
    }
    k.end = c.at();
    if (is_template(text, word_at)) continue;  // not launchable without name expressions (not emulated)
    const auto list = split_top_level(params);
    if (list.size() == 1 && (list[0] == "void" || list[0].empty())) {
      k.param_count = 0;
    } else {
      for (const auto& p : list)
        if (p.find("...") != std::string::npos)
          out.error = "kernel '" + k.name + "' has variadic parameters, which CUDA does not allow";
      k.param_count = static_cast<unsigned>(list.size());
    }
    out.kernels.push_back(std::move(k));
  }
  return out;
}

std::string insert_kernel_glue(std::string_view text, const kernel_scan& scan) {
  std::string out;
  out.reserve(text.size() + scan.kernels.size() * 1200);
  std::size_t copied = 0;
  for (std::size_t i = 0; i < scan.kernels.size(); ++i) {
    const kernel_definition& k = scan.kernels[i];
    out.append(text.substr(copied, k.end - copied));
    copied = k.end;
    const std::string n = std::to_string(i);
    std::string args;
    std::string sizes = "{", aligns = "{";
    for (unsigned p = 0; p < k.param_count; ++p) {
      const std::string ps = std::to_string(p);
      args += (p ? ", " : "") + std::string("QD_EMU_ARG(") + k.name + ", " + ps + ")";
      sizes += "sizeof(QD_EMU_PARAM(" + k.name + ", " + ps + ")), ";
      aligns += "alignof(QD_EMU_PARAM(" + k.name + ", " + ps + ")), ";
    }
    sizes += "0u}";
    aligns += "0u}";
    const std::string call = k.name + "(" + args + ");";
    out += " static_assert(qd_emu_signature<decltype(" + k.name + ")>::arity == " + std::to_string(k.param_count) +
           "u, \"the emulated compiler miscounted the parameters of " + k.name + "\");";
    // Flattened: with the kernel inlined, its by-value parameters are read in place
    // instead of being copied for every thread (3.6 KB for Quadrants' parameter block).
    out += " __attribute__((flatten)) static void qd_emu_block_" + n +
           "(void* const* qd_emu_args, qd_emu_thread* qd_emu_t) { "
           "(void)qd_emu_args; qd_emu_each_thread(qd_emu_t, [qd_emu_args]() { (void)qd_emu_args; " +
           call + " }); }";
    out += " static void qd_emu_thread_" + n +
           "(void* const* qd_emu_args, qd_emu_thread* qd_emu_t) { "
           "(void)qd_emu_args; qd_emu_self = qd_emu_t; " +
           call + " }";
    out += " static const unsigned qd_emu_sizes_" + n + "[] = " + sizes + ";";
    out += " static const unsigned qd_emu_aligns_" + n + "[] = " + aligns + ";";
    out += " static const qd_emu_registrar qd_emu_registrar_" + n + "({\"" + k.name +
           "\", reinterpret_cast<const void*>(&" + k.name + "), &qd_emu_block_" + n + ", &qd_emu_thread_" + n + ", " +
           std::to_string(k.param_count) + "u, qd_emu_sizes_" + n + ", qd_emu_aligns_" + n + ", (unsigned)(" +
           (k.max_threads.empty() ? std::string("0") : k.max_threads) + "), " + (scan.synchronizes ? "1u" : "0u") +
           "});";
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace qd::emulation
