# Packaging test. MODE=install: install the build tree into a fresh prefix, then
# configure, build and run a consumer that uses find_package(quadrants); a
# dependency hidden from that consumer is reported with its Debian package.
# MODE=subdirectory: build a consumer of quadrants::header-only that add_subdirectory()s the
# source tree (the implementation compiled as one TU beside it).
# MODE=demo_install: a fresh build of only what `make demo` builds installs whole, and a
# consumer of the installed quadrants::quadrants builds against that prefix (the consumer
# project also configures its quadrants::header-only program there: the installed target and
# its implementation.cpp exist; subdirectory builds that form).
# The consumers build without optimisation (CMAKE_BUILD_TYPE empty): what is checked is
# how they find, compile and link Quadrants, and -O0 halves the time of compiling it.
# Each form is built once, as make test runs all four: the compiled library from the build
# tree (install) and fresh (demo_install), the header-only one (subdirectory). The
# subdirectory build, demo_install's build and its consumer compile with
# CONSUMER_CXX (clang where installed: another compiler than the build tree's, and faster at -O0).
# MODE=missing_dependency: configuring the source tree without a dependency
# stops with the dependency's Debian package.
# MODE=emulated_gpus: the installed bin/qd-with-emulated-gpu runs PROGRAM on the
# emulated GPUs installed beside it, and says what is missing when they are not.
set(work ${WORK_DIR}/${MODE})
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
endfunction()
# run_fails(<expected text> <command...>): the command must fail and say <expected text>.
function(run_fails expected)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "succeeded but should have failed: ${ARGN}\n${out}\n${err}")
  endif()
  string(REGEX REPLACE "[ \t\r\n]+" " " said "${out}${err}")  # CMake wraps long messages
  string(FIND "${said}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "failed without saying '${expected}': ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
set(generator_args -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_COMPILER=${CXX})
if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${work}/prefix)
  if(NOT EXISTS ${work}/prefix/lib/cmake/quadrants/quadrants-config.cmake AND
     NOT EXISTS ${work}/prefix/lib64/cmake/quadrants/quadrants-config.cmake)
    message(FATAL_ERROR "the install did not produce quadrants-config.cmake")
  endif()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/consumer -B ${work}/build ${generator_args}
      -DCMAKE_PREFIX_PATH=${work}/prefix)
  run(${CMAKE_COMMAND} --build ${work}/build -j 2 --target consumer)
  run(${work}/build/consumer)
  run_fails("Debian package libfmt-dev" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/consumer
            -B ${work}/build-without-fmt ${generator_args} -DCMAKE_PREFIX_PATH=${work}/prefix
            -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON)
elseif(MODE STREQUAL "demo_install")
  # As `make demo`: only the demo target, at -O0 to keep the test short (build type None: an
  # empty one would become Release, the default of a top-level build), with CONSUMER_CXX
  # (the build tree compiles the same library with its own compiler).
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${work}/build -DCMAKE_CXX_COMPILER=${CONSUMER_CXX} -DCMAKE_BUILD_TYPE=None
      -DQD_BUILD_TESTS=OFF -DQD_BUILD_BENCH=OFF)
  run(${CMAKE_COMMAND} --build ${work}/build -j 2 --target heat_diffusion)
  run(${CMAKE_COMMAND} --install ${work}/build --prefix ${work}/prefix)
  run(${work}/prefix/bin/qd-cache path)
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/consumer -B ${work}/consumer -DCMAKE_BUILD_TYPE=
      -DCMAKE_CXX_COMPILER=${CONSUMER_CXX} -DCMAKE_PREFIX_PATH=${work}/prefix)
  run(${CMAKE_COMMAND} --build ${work}/consumer -j 2 --target consumer)
  run(${work}/consumer/consumer)
elseif(MODE STREQUAL "missing_dependency")
  set(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR} -DCMAKE_CXX_COMPILER=${CXX} -DQD_BUILD_TESTS=OFF
      -DQD_BUILD_BENCH=OFF -DQD_BUILD_EXAMPLES=OFF)
  run_fails("Debian package libfmt-dev" ${configure} -B ${work}/no-fmt -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON)
  run_fails("Debian package libboost-dev" ${configure} -B ${work}/no-boost -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON)
  file(MAKE_DIRECTORY ${work}/empty-pkgconfig)
  run_fails("Debian package libzstd-dev" ${CMAKE_COMMAND} -E env PKG_CONFIG_LIBDIR=${work}/empty-pkgconfig
            PKG_CONFIG_PATH= ${configure} -B ${work}/no-zstd)
elseif(MODE STREQUAL "emulated_gpus")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${work}/prefix)
  set(script ${work}/prefix/bin/qd-with-emulated-gpu)
  file(READ ${script} text)
  foreach(tree ${SOURCE_DIR} ${BUILD_DIR})
    string(FIND "${text}" "${tree}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "the installed ${script} names ${tree}")
    endif()
  endforeach()
  # The variables point into the prefix.
  execute_process(COMMAND ${script} env RESULT_VARIABLE rc OUTPUT_VARIABLE env)
  foreach(variable QD_CUDA_PATH QD_NVRTC_PATH QD_HIP_PATH QD_HIPRTC_PATH)
    string(REGEX MATCH "${variable}=[^\n]*" line "${env}")
    string(FIND "${line}" "=${work}/prefix/" at)
    if(NOT rc EQUAL 0 OR NOT at GREATER 0 OR NOT line MATCHES "/libqd_emulated_[a-z]+\\.so$")
      message(FATAL_ERROR "qd-with-emulated-gpu (${rc}) did not point ${variable} into ${work}/prefix:\n${env}")
    endif()
  endforeach()
  # A program on each emulated GPU: a kernel compiled and run (a case that finds a library
  # that is not the emulation reports itself skipped).
  execute_process(COMMAND ${script} ${PROGRAM} "--test-case=*compiled for the device's target*"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR "${out}${err}" MATCHES "skipped on" OR NOT out MATCHES "test cases: *2 \\| *2 passed")
    message(FATAL_ERROR "${PROGRAM} under ${script} failed (${rc}):\n${out}\n${err}")
  endif()
  # A library missing from the prefix: the script says which, and what to build.
  file(REMOVE_RECURSE ${work}/partial)
  file(COPY ${work}/prefix/ DESTINATION ${work}/partial)
  file(GLOB_RECURSE hip ${work}/partial/*/libqd_emulated_hip.so)
  file(REMOVE ${hip})
  run_fails("libqd_emulated_hip.so is not installed: build the target qd_emulated_gpus"
            ${work}/partial/bin/qd-with-emulated-gpu true)
else()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/subdirectory -B ${work}/build -DCMAKE_BUILD_TYPE=
      -DCMAKE_CXX_COMPILER=${CONSUMER_CXX} -DQD_SOURCE_DIR=${SOURCE_DIR})
  run(${CMAKE_COMMAND} --build ${work}/build -j 2 --target consumer_header_only)
  run(${work}/build/consumer_header_only)
endif()
message(STATUS "package test (${MODE}): ok")
