# The code generator's fingerprint: a hash of the sources that decide what code a lowered
# task becomes (include/quadrants/{base,ir,analysis,codegen,backend}: the analysis plans the
# tasks a split variant record lists). Cache keys of generated code
# cover the lowered IR and this id instead of the generated text, so a warm start
# generates no source; include/quadrants/codegen/generator_id.hpp holds it, checked in.
#   cmake -DQD_ROOT=<source dir> -DMODE=check -P cmake/QuadrantsGeneratorId.cmake   (fails when stale)
#   cmake -DQD_ROOT=<source dir> -DMODE=write -P cmake/QuadrantsGeneratorId.cmake   (scripts/update-generator-id)
set(header "${QD_ROOT}/include/quadrants/codegen/generator_id.hpp")
set(files)
foreach(dir base ir analysis codegen backend)
  file(GLOB_RECURSE found RELATIVE "${QD_ROOT}" "${QD_ROOT}/include/quadrants/${dir}/*.hpp")
  list(APPEND files ${found})
endforeach()
list(REMOVE_ITEM files "include/quadrants/codegen/generator_id.hpp")
list(SORT files)
set(all "")
foreach(f IN LISTS files)
  file(SHA256 "${QD_ROOT}/${f}" h)
  string(APPEND all "${f} ${h}\n")
endforeach()
string(SHA256 id "${all}")
string(SUBSTRING "${id}" 0 32 id)
set(text "// The code generator's fingerprint (cmake/QuadrantsGeneratorId.cmake): a hash of the sources
// of include/quadrants/{base,ir,analysis,codegen,backend}. Written by scripts/update-generator-id.
#pragma once

#include <string_view>

namespace qd::inline v0::codegen {

inline constexpr std::string_view generator_id = \"${id}\";

}  // namespace qd::inline v0::codegen
")
if(MODE STREQUAL "write")
  # Written only when it changes: a rewrite with the same text would still make every
  # target that includes it rebuild.
  file(CONFIGURE OUTPUT "${header}" CONTENT "${text}" @ONLY)
  message(STATUS "generator_id ${id}")
else()
  set(current "")
  if(EXISTS "${header}")
    file(READ "${header}" current)
  endif()
  if(NOT current STREQUAL text)
    message(FATAL_ERROR "include/quadrants/codegen/generator_id.hpp is stale: the code generator's sources "
                        "(include/quadrants/{base,ir,analysis,codegen,backend}) changed. Run scripts/update-generator-id "
                        "and commit the header: cache keys of generated code depend on it.")
  endif()
endif()
