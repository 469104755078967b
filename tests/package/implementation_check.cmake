# The three lists of implementation files agree: every *-inl.hpp under include/ is
# compiled once by quadrants::quadrants (src/quadrants.cpp or src/cache.cpp) and once by
# <quadrants/implementation.hpp> (quadrants::header-only), so neither mode misses one.
# Usage: cmake -DSOURCE_DIR=<source tree> -P implementation_check.cmake
file(GLOB_RECURSE inl RELATIVE ${SOURCE_DIR}/include ${SOURCE_DIR}/include/quadrants/*-inl.hpp)
file(READ ${SOURCE_DIR}/include/quadrants/implementation.hpp header_list)
file(READ ${SOURCE_DIR}/src/quadrants.cpp library_list)
file(READ ${SOURCE_DIR}/src/cache.cpp cache_list)
set(problems "")
foreach(f ${inl})
  string(FIND "${header_list}" "\"${f}\"" in_header)
  string(FIND "${library_list}${cache_list}" "\"${f}\"" in_library)
  if(in_header EQUAL -1)
    string(APPEND problems "\n  ${f} is missing from include/quadrants/implementation.hpp")
  endif()
  if(in_library EQUAL -1)
    string(APPEND problems "\n  ${f} is missing from src/quadrants.cpp and src/cache.cpp")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "implementation lists out of step:${problems}")
endif()
list(LENGTH inl count)
message(STATUS "implementation lists: all ${count} -inl files in both")
