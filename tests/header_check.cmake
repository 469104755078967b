# Every public header compiles on its own: one generated translation unit per
# header, built as part of the test build (a failure breaks the build).
file(GLOB_RECURSE qd_public_headers RELATIVE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/include/quadrants/*.hpp)
# implementation.hpp is the implementation itself (the package tests compile it).
list(FILTER qd_public_headers EXCLUDE REGEX "-inl\\.hpp$|/detail/|^quadrants/implementation\\.hpp$")
set(qd_header_check_sources)
foreach(header ${qd_public_headers})
  string(REPLACE "/" "__" stem ${header})
  string(REPLACE ".hpp" ".cpp" stem ${stem})
  set(tu ${CMAKE_CURRENT_BINARY_DIR}/header_check/${stem})
  file(CONFIGURE OUTPUT ${tu} CONTENT "#include <${header}>\n#include <${header}>  // include guards\n")
  list(APPEND qd_header_check_sources ${tu})
endforeach()
add_library(qd_header_check OBJECT ${qd_header_check_sources})
target_link_libraries(qd_header_check PRIVATE quadrants::quadrants fmt::fmt qd_deps::zstd qd_deps::xxhash)
# What is checked is that each header parses and instantiates on its own; nothing of it is
# run, so it is not optimised (-O0: 1 to 25 % less time per header, measured on four).
target_compile_options(qd_header_check PRIVATE -O0)
