// Checks every compile-failure case's misuses with one compile: each misuse (QD_MISUSE=k of
// a case file, one per `// expect:` line) in a namespace of its own in one translation unit,
// and each must show its expected diagnostic. A diagnostic counts for a misuse only when the
// error itself, or the "required from here" line of its instantiation chain, lies in that
// case's file (and, for a file with several misuses, in its `#if QD_MISUSE == k` block).
// A misuse the batch does not credit is compiled alone, as check.cmake does: GCC reports a
// failing instantiation once, so a misuse that repeats another case's is only seen alone.
// Loading the precompiled header is ~0.8 of a misuse's ~0.9 CPU s, which the batch pays once.
// Usage: compile_fail_misuses <work dir> <compiler> <flag>... -- <case.cpp>...
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

struct misuse {
  std::string file;
  int k = 1;                               // QD_MISUSE
  std::string expect;                      // the case's k-th `// expect:` regex
  std::vector<std::pair<int, int>> block;  // [first, last] lines of `#if QD_MISUSE == k` blocks
  std::string seen;                        // the diagnostics credited to it
};

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command; returns its exit status and its output (stdout and stderr).
std::pair<int, std::string> run(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  char buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;) out.append(buffer, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::vector<misuse> read_case(const std::string& file) {
  std::ifstream in(file);
  std::vector<std::string> expects;
  std::vector<misuse> out;
  std::map<int, std::vector<std::pair<int, int>>> blocks;
  const std::regex opens(R"(^#if QD_MISUSE == ([0-9]+))");
  int open_k = 0, open_line = 0, depth = 0, n = 0;
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.rfind("// expect: ", 0) == 0) expects.push_back(line.substr(11));
    if (std::regex_search(line, m, opens)) {
      open_k = std::stoi(m[1]);
      open_line = n;
      depth = 1;
    } else if (open_k != 0) {  // the block ends at its #else, #elif or #endif
      const bool ends = line.rfind("#el", 0) == 0 && depth == 1;
      if (line.rfind("#if", 0) == 0) ++depth;
      if (line.rfind("#endif", 0) == 0) --depth;
      if (ends || depth == 0) {
        blocks[open_k].push_back({open_line, n});
        open_k = 0;
      }
    }
  }
  for (std::size_t k = 0; k < expects.size(); ++k) {
    misuse u;
    u.file = file;
    u.k = static_cast<int>(k) + 1;
    u.expect = expects[k];
    u.block = blocks[u.k];
    out.push_back(u);
  }
  return out;
}

// The misuse a diagnostic at file:line belongs to, or -1.
int owner(const std::vector<misuse>& all, const std::string& file, int line) {
  int found = -1;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const misuse& u = all[i];
    if (u.file != file) continue;
    bool inside = u.block.empty();  // a file with one misuse: anywhere in it
    for (const auto& [first, last] : u.block) inside = inside || (line >= first && line <= last);
    if (inside) {
      if (found != -1) return -1;  // two misuses claim it
      found = static_cast<int>(i);
    }
  }
  return found;
}

// Credits each error of the batch's output to the misuse it belongs to (see the top).
void credit(const std::string& output, std::vector<misuse>& all) {
  static const std::regex located(R"(^(.+?):([0-9]+):[0-9]+: (error|note|warning): )");
  static const std::regex here(R"(^(.+?):([0-9]+):[0-9]+:   required from here)");
  static const std::regex context(
      R"(^(In file included from |\s+from |.+?: (In|At) .*:$|.+?:[0-9]+:[0-9]+:   (required|in .constexpr.)))");
  std::istringstream lines(output);
  std::vector<std::pair<std::string, int>> chain;  // "required from here" lines before an error
  int current = -1;                                // the misuse the lines now belong to
  bool in_context = false;
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, context)) {
      if (!in_context) chain.clear();
      in_context = true;
      if (std::regex_search(line, m, here)) chain.push_back({m[1], std::stoi(m[2])});
      continue;
    }
    const bool is_located = std::regex_search(line, m, located);
    if (is_located && m[3] == "error") {
      current = owner(all, m[1], std::stoi(m[2]));
      if (current == -1 && in_context) {
        int from_chain = -1;
        for (const auto& [file, at] : chain) {
          const int o = owner(all, file, at);
          if (o == -1) continue;
          from_chain = from_chain == -1 || from_chain == o ? o : -2;
        }
        current = from_chain >= 0 ? from_chain : -1;
      }
    }
    in_context = false;
    chain.clear();
    if (current >= 0) all[static_cast<std::size_t>(current)].seen += line + "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: compile_fail_misuses <work dir> <compiler> <flag>... -- <case.cpp>...\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::string compiler = quoted(argv[2]);
  int i = 3;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) compiler += " " + quoted(argv[i]);
  std::vector<misuse> all;
  for (++i; i < argc; ++i)
    for (misuse& u : read_case(argv[i])) all.push_back(std::move(u));
  if (all.empty()) {
    std::cerr << "no misuse to check\n";
    return 2;
  }
  std::string text = "// Every compile-failure misuse, each in a namespace of its own (misuse_batch.cpp).\n";
  for (std::size_t n = 0; n < all.size(); ++n)
    text += "namespace qd_misuse_" + std::to_string(n + 1) + " {\n#define QD_MISUSE " + std::to_string(all[n].k) +
            "\n#include \"" + all[n].file + "\"\n#undef QD_MISUSE\n}\n";
  const std::string tu = dir + "/misuse_batch.cpp";
  std::ofstream(tu) << text;
  const auto [status, output] = run(compiler + " " + quoted(tu));
  if (status == 0) {
    std::cerr << "the batch of " << all.size() << " misuses compiled; each must be a compile error\n";
    return 1;
  }
  credit(output, all);
  int failures = 0, alone = 0;
  for (misuse& u : all) {
    const std::regex expect(u.expect);
    if (std::regex_search(u.seen, expect)) continue;
    ++alone;  // not credited in the batch: compiled alone
    std::cout << "compiled alone: " << u.file << ", misuse " << u.k << "\n";
    const auto [s, log] = run(compiler + " -DQD_MISUSE=" + std::to_string(u.k) + " " + quoted(u.file));
    if (s == 0) {
      std::cerr << u.file << ": misuse " << u.k << " compiled; it must be a compile error\n";
      ++failures;
    } else if (!std::regex_search(log, expect)) {
      std::cerr << u.file << ": misuse " << u.k << " failed to compile, but without a diagnostic matching '" << u.expect
                << "':\n"
                << log << "\n";
      ++failures;
    }
  }
  std::cout << all.size() << " misuses: " << all.size() - static_cast<std::size_t>(alone) << " shown in one compile, "
            << alone << " compiled alone, " << failures << " failed\n";
  return failures == 0 ? 0 : 1;
}
