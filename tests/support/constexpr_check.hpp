// QD_CONSTEXPR_CHECK(condition, message): a static_assert over IR built at compile time.
// clang 14 cannot evaluate libstdc++ 12's constexpr std::string and std::vector<bool>, which
// building IR uses, so under clang (the sanitizer trees) the check is left to GCC: the main
// tree, which builds every test that uses it (Makefile SANITIZER_ONLY leaves them there).
#pragma once

#if defined(__clang__)
#define QD_CONSTEXPR_CHECK(...) static_assert(true, "checked where GCC compiles this file")
// The helpers only these checks call are then unused (GCC still warns of unused ones).
#pragma clang diagnostic ignored "-Wunused-function"
#pragma clang diagnostic ignored "-Wunused-const-variable"
#else
#define QD_CONSTEXPR_CHECK(...) static_assert(__VA_ARGS__)
#endif
