# Packaging test. MODE=install: install the build tree into a fresh prefix, then
# configure, build and run a consumer that uses find_package(quadrants).
# MODE=subdirectory: build a consumer that add_subdirectory()s the source tree.
set(work ${WORK_DIR}/${MODE})
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
endfunction()
set(generator_args -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX})
if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${work}/prefix)
  if(NOT EXISTS ${work}/prefix/lib/cmake/quadrants/quadrants-config.cmake AND
     NOT EXISTS ${work}/prefix/lib64/cmake/quadrants/quadrants-config.cmake)
    message(FATAL_ERROR "the install did not produce quadrants-config.cmake")
  endif()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/consumer -B ${work}/build ${generator_args}
      -DCMAKE_PREFIX_PATH=${work}/prefix)
  run(${CMAKE_COMMAND} --build ${work}/build -j 2)
  run(${work}/build/consumer)
  run(${work}/build/consumer_header_only)
else()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/subdirectory -B ${work}/build ${generator_args}
      -DQD_SOURCE_DIR=${SOURCE_DIR})
  run(${CMAKE_COMMAND} --build ${work}/build -j 2 --target consumer)
  run(${work}/build/consumer)
endif()
message(STATUS "package test (${MODE}): ok")
