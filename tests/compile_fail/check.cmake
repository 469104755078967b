# The compile-failure cases as written (without QD_MISUSE) must compile: their misuse checks
# (compile_fail/misuses, tests/support/compile_fail_misuses.cpp) prove nothing otherwise.
# Usage: cmake -DCXX=<compiler> -DCORRECT=<file;file...> -DTU=<path> -DINCLUDES=<dir;dir>
#        [-DPCH=<header>] -P check.cmake
# All of them compile as one translation unit (TU, written here), each case in a namespace of
# its own. PCH: a header included first, whose precompiled form (<header>.gch) the compiler
# uses; loading it is nearly all of a case's compile time (~0.9 of ~1 s).
set(flags -std=c++20 -fsyntax-only -DQD_SEPARATE_COMPILATION)
if(PCH)
  list(APPEND flags -include ${PCH} -Winvalid-pch)
endif()
foreach(dir ${INCLUDES})
  list(APPEND flags -I${dir})
endforeach()
if(NOT CORRECT)
  message(FATAL_ERROR "check.cmake: -DCORRECT=<case files> is required")
endif()
set(text "// The correct versions of the compile-failure cases (tests/compile_fail/check.cmake).\n")
set(n 0)
foreach(case ${CORRECT})
  math(EXPR n "${n} + 1")
  string(APPEND text "namespace qd_case_${n} {\n#include \"${case}\"\n}\n#undef QD_MISUSE\n")  # a case may define it
endforeach()
file(WRITE ${TU} "${text}")
execute_process(COMMAND ${CXX} ${flags} ${TU} RESULT_VARIABLE ok_result ERROR_VARIABLE ok_log)
if(NOT ok_result EQUAL 0)
  message(FATAL_ERROR "a case's correct version does not compile, so its misuse check proves nothing:\n${ok_log}")
endif()
message(STATUS "the correct versions of ${n} cases compile")
