# Runs one compile-failure case: the file must compile as written (checked for all cases at
# once, below), and must fail to compile with QD_MISUSE defined, with a diagnostic matching
# its `// expect:` line.
# A file with several `// expect:` lines holds as many misuses: with QD_MISUSE=n it must
# fail with the n-th line's diagnostic (one correct compile serves them all).
# Usage: cmake -DCXX=<compiler> -DSRC=<file> -DINCLUDES=<dir;dir> [-DPCH=<header>] -P check.cmake
# PCH: a header included first, whose precompiled form (<header>.gch) the compiler uses.
# -DCORRECT=<file;file...> -DTU=<path> instead: the correct versions of all those cases compile,
# as one translation unit (TU, written here), each case in a namespace of its own. Loading the
# precompiled header is nearly all of a case's compile time (~0.9 of ~1 s), so they are
# checked together, and each case's own test compiles only its misuses.
set(flags -std=c++20 -fsyntax-only -DQD_SEPARATE_COMPILATION)
if(PCH)
  list(APPEND flags -include ${PCH} -Winvalid-pch)
endif()
foreach(dir ${INCLUDES})
  list(APPEND flags -I${dir})
endforeach()
if(CORRECT)
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
  return()
endif()
file(STRINGS ${SRC} expect_lines REGEX "^// expect: ")
if(NOT expect_lines)
  message(FATAL_ERROR "${SRC}: no '// expect: <regex>' line")
endif()
set(misuse 0)
foreach(expect ${expect_lines})
  math(EXPR misuse "${misuse} + 1")
  string(REGEX REPLACE "^// expect: " "" expect "${expect}")
  execute_process(COMMAND ${CXX} ${flags} -DQD_MISUSE=${misuse} ${SRC} RESULT_VARIABLE bad_result ERROR_VARIABLE bad_log)
  if(bad_result EQUAL 0)
    message(FATAL_ERROR "${SRC}: misuse ${misuse} compiled; it must be a compile error")
  endif()
  if(NOT bad_log MATCHES "${expect}")
    message(FATAL_ERROR "${SRC}: misuse ${misuse} failed to compile, but without a diagnostic matching '${expect}':\n${bad_log}")
  endif()
endforeach()
message(STATUS "${SRC}: rejected as expected")
