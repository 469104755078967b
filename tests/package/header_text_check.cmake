# The installed headers speak for themselves and version their names:
# - no references to the project's SPEC (it is not shipped), in comments or messages;
# - every opening of namespace qd goes through the versioned inline namespace
#   (qd::inline v0), so that two major versions' symbols never mix in one link.
# Usage: cmake -DSOURCE_DIR=<source tree> -P header_text_check.cmake
file(GLOB_RECURSE headers RELATIVE ${SOURCE_DIR}/include ${SOURCE_DIR}/include/quadrants/*.hpp)
if(NOT headers)  # a relative SOURCE_DIR finds nothing: a check of nothing must not pass
  message(FATAL_ERROR "no headers under ${SOURCE_DIR}/include/quadrants (SOURCE_DIR must be absolute)")
endif()
set(problems "")
foreach(f ${headers})
  file(STRINGS ${SOURCE_DIR}/include/${f} lines ENCODING UTF-8 REGEX "SPEC|^namespace qd")
  foreach(line ${lines})
    string(FIND "${line}" "SPEC §" at)
    if(NOT at EQUAL -1)
      string(APPEND problems "\n  ${f}: cites the SPEC (say what the code does instead): ${line}")
    endif()
    if(line MATCHES "^namespace qd" AND NOT line MATCHES "^namespace qd::inline v0(::[a-z_:]+)? {")
      string(APPEND problems "\n  ${f}: opens namespace qd outside qd::inline v0: ${line}")
    endif()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "header text:${problems}")
endif()
list(LENGTH headers count)
message(STATUS "header text: ${count} headers, no SPEC references, all in qd::inline v0")
