# Every *-inl.hpp under include/ is in one of the two implementation lists
# (detail/implementation_core.hpp, detail/implementation_cache.hpp) that both
# quadrants::quadrants (src/*.cpp) and <quadrants/implementation.hpp> compile.
# Usage: cmake -DSOURCE_DIR=<source tree> -P implementation_check.cmake
file(GLOB_RECURSE inl RELATIVE ${SOURCE_DIR}/include ${SOURCE_DIR}/include/quadrants/*-inl.hpp)
if(NOT inl)  # a relative SOURCE_DIR finds nothing: a check of nothing must not pass
  message(FATAL_ERROR "no -inl files under ${SOURCE_DIR}/include/quadrants (SOURCE_DIR must be absolute)")
endif()
file(READ ${SOURCE_DIR}/include/quadrants/detail/implementation_core.hpp core_list)
file(READ ${SOURCE_DIR}/include/quadrants/detail/implementation_cache.hpp cache_list)
set(problems "")
foreach(f ${inl})
  string(FIND "${core_list}${cache_list}" "\"${f}\"" listed)
  if(listed EQUAL -1)
    string(APPEND problems "\n  ${f} is in neither include/quadrants/detail/implementation_core.hpp nor implementation_cache.hpp")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "implementation lists out of step:${problems}")
endif()
list(LENGTH inl count)
message(STATUS "implementation lists: all ${count} -inl files listed")
