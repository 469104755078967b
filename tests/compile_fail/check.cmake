# Runs one compile-failure case: the file must compile as written, and must fail
# to compile with QD_MISUSE defined, with a diagnostic matching its `// expect:` line.
# A file with several `// expect:` lines holds as many misuses: with QD_MISUSE=n it must
# fail with the n-th line's diagnostic (one correct compile serves them all).
# Usage: cmake -DCXX=<compiler> -DSRC=<file> -DINCLUDES=<dir;dir> [-DPCH=<header>] -P check.cmake
# PCH: a header included first, whose precompiled form (<header>.gch) the compiler uses.
file(STRINGS ${SRC} expect_lines REGEX "^// expect: ")
if(NOT expect_lines)
  message(FATAL_ERROR "${SRC}: no '// expect: <regex>' line")
endif()
set(flags -std=c++20 -fsyntax-only -DQD_SEPARATE_COMPILATION)
if(PCH)
  list(APPEND flags -include ${PCH} -Winvalid-pch)
endif()
foreach(dir ${INCLUDES})
  list(APPEND flags -I${dir})
endforeach()
execute_process(COMMAND ${CXX} ${flags} ${SRC} RESULT_VARIABLE ok_result ERROR_VARIABLE ok_log)
if(NOT ok_result EQUAL 0)
  message(FATAL_ERROR "${SRC}: the correct version does not compile, so the misuse check proves nothing:\n${ok_log}")
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
