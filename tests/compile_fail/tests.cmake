# Misuse that C++ can catch must not compile; each case also compiles when fixed.
# The cases share one precompiled header of what they include (built with the build, with
# the flags the checks compile with): -fsyntax-only of a case then takes ~1 s instead of
# ~4.5 s; the misuses compile together, in one translation unit (compile_fail/misuses), and
# so do the correct versions (compile_fail/correct_versions). A header the compiler refuses is a warning and the text is read.
get_target_property(qd_boost_includes Boost::headers INTERFACE_INCLUDE_DIRECTORIES)
set(qd_compile_fail_includes ${PROJECT_SOURCE_DIR}/include ${qd_boost_includes})
set(qd_compile_fail_pch ${CMAKE_CURRENT_BINARY_DIR}/compile_fail/cases.hpp)
file(WRITE ${qd_compile_fail_pch}.in
     "#include <array>\n#include <cmath>\n#include <cstdint>\n#include <string>\n#include <tuple>\n"
     "#include <quadrants/quadrants.hpp>\n")
configure_file(${qd_compile_fail_pch}.in ${qd_compile_fail_pch} COPYONLY)  # rewritten only when it changes
list(TRANSFORM qd_compile_fail_includes PREPEND -I OUTPUT_VARIABLE qd_compile_fail_include_flags)
add_custom_command(
  OUTPUT ${qd_compile_fail_pch}.gch
  COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -DQD_SEPARATE_COMPILATION ${qd_compile_fail_include_flags}
          -x c++-header ${qd_compile_fail_pch} -o ${qd_compile_fail_pch}.gch -MD -MF ${qd_compile_fail_pch}.d
  DEPFILE ${qd_compile_fail_pch}.d
  DEPENDS ${qd_compile_fail_pch}
  COMMENT "Precompiling the compile-failure cases' header"
  VERBATIM)
add_custom_target(qd_compile_fail_pch ALL DEPENDS ${qd_compile_fail_pch}.gch)

file(GLOB qd_compile_fail_cases ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
add_test(NAME compile_fail/correct_versions
         COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} "-DCORRECT=${qd_compile_fail_cases}"
                 -DTU=${CMAKE_CURRENT_BINARY_DIR}/compile_fail/correct_versions.cpp -DPCH=${qd_compile_fail_pch}
                 "-DINCLUDES=${qd_compile_fail_includes}" -P ${CMAKE_CURRENT_LIST_DIR}/check.cmake)
# Every case's misuses in one compile (tests/support/compile_fail_misuses.cpp): each must fail
# with its `// expect:` diagnostic; one the batch cannot credit to its case is compiled alone.
add_executable(compile_fail_misuses ${CMAKE_CURRENT_SOURCE_DIR}/support/compile_fail_misuses.cpp)
add_test(NAME compile_fail/misuses
         COMMAND compile_fail_misuses ${CMAKE_CURRENT_BINARY_DIR}/compile_fail ${CMAKE_CXX_COMPILER} -std=c++20
                 -fsyntax-only -DQD_SEPARATE_COMPILATION -include ${qd_compile_fail_pch} -Winvalid-pch
                 ${qd_compile_fail_include_flags} -- ${qd_compile_fail_cases})
qd_test_programs(compile_fail/misuses compile_fail_misuses)
