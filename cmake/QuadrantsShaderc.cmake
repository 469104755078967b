# libqd_shaderc.so (src/shaderc_shim.cpp): shaderc with glslang and SPIRV-Tools linked
# in from their static libraries, built where those are installed (Debian: libshaderc-dev,
# glslang-dev, spirv-tools). The Vulkan backend opens it with dlopen before any system
# libshaderc.so.1 (Debian 12's cannot be opened alone: it lacks its glslang and
# SPIRV-Tools dependencies). Nothing links against it; without the archives it is not
# built and the backend looks for a system shaderc only (docs/backends.md).
set(qd_shaderc_required shaderc_combined glslang SPIRV SPIRV-Tools-opt SPIRV-Tools)
# Parts of glslang that older releases ship as archives of their own.
set(qd_shaderc_optional MachineIndependent GenericCodeGen OSDependent OGLCompiler glslang-default-resource-limits)
set(qd_shaderc_archives "")
set(qd_shaderc_missing "")
foreach(archive ${qd_shaderc_required} ${qd_shaderc_optional})
  find_library(QD_ARCHIVE_${archive} NAMES lib${archive}.a)
  if(QD_ARCHIVE_${archive})
    list(APPEND qd_shaderc_archives ${QD_ARCHIVE_${archive}})
  elseif(archive IN_LIST qd_shaderc_required)
    list(APPEND qd_shaderc_missing lib${archive}.a)
  endif()
endforeach()
find_path(QD_SHADERC_INCLUDE_DIR shaderc/shaderc.h)
if(NOT QD_SHADERC_INCLUDE_DIR)
  list(APPEND qd_shaderc_missing shaderc/shaderc.h)
endif()

if(qd_shaderc_missing)
  message(STATUS "Quadrants' shaderc (libqd_shaderc.so): not built, missing ${qd_shaderc_missing} "
                 "(libshaderc-dev, glslang-dev, spirv-tools); the Vulkan backend uses a system libshaderc.so.1")
  return()
endif()
message(STATUS "Quadrants' shaderc (libqd_shaderc.so): built")
add_library(qd_shaderc SHARED ${PROJECT_SOURCE_DIR}/src/shaderc_shim.cpp)
target_include_directories(qd_shaderc PRIVATE ${QD_SHADERC_INCLUDE_DIR})
# --start-group: the archives depend on each other; --exclude-libs: only the lookup is exported.
# --no-undefined, except in a clang sanitizer tree: clang leaves the sanitizer runtime out of
# shared libraries (the program that loads them brings it), so its symbols are undefined there.
set(qd_shaderc_no_undefined -Wl,--no-undefined)
if(QD_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(qd_shaderc_no_undefined "")
endif()
target_link_libraries(qd_shaderc PRIVATE ${qd_shaderc_no_undefined} -Wl,--exclude-libs,ALL -Wl,--start-group
                                         ${qd_shaderc_archives} -Wl,--end-group Threads::Threads)
set_target_properties(qd_shaderc PROPERTIES CXX_VISIBILITY_PRESET hidden)
# Where the library looks for it: the build tree, then the installed library directory.
# (The header-only mode finds it through QD_SHADERC_PATH or LD_LIBRARY_PATH.)
target_compile_definitions(quadrants PRIVATE
                           "QD_SHADERC_SHIM_DIRS=\"$<TARGET_FILE_DIR:qd_shaderc>:${CMAKE_INSTALL_FULL_LIBDIR}\"")
add_dependencies(quadrants qd_shaderc)
if(QD_INSTALL)
  install(TARGETS qd_shaderc LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
