# Packaging: the installed package works with find_package, and the source tree
# works with add_subdirectory (both build and run a small consumer); installing
# after `make demo` works; a missing dependency names its Debian package.
# The consumers that compile the library or its implementation (subdirectory, the header-only
# one) use clang where it is installed (make test installs it): a second compiler, and about
# 40 % less time at -O0 than GCC for the same code (docs/testing.md).
find_program(QD_PACKAGE_CLANGXX NAMES clang++ clang++-14)
set(qd_package_consumer_cxx ${CMAKE_CXX_COMPILER})
if(QD_PACKAGE_CLANGXX)
  set(qd_package_consumer_cxx ${QD_PACKAGE_CLANGXX})
endif()
foreach(mode install subdirectory demo_install missing_dependency)
  add_test(NAME package/${mode}
           COMMAND ${CMAKE_COMMAND} -DMODE=${mode} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBUILD_DIR=${PROJECT_BINARY_DIR}
                   -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/package -DCXX=${CMAKE_CXX_COMPILER}
                   -DCONSUMER_CXX=${qd_package_consumer_cxx} -P ${CMAKE_CURRENT_LIST_DIR}/check.cmake)
  set_tests_properties(package/${mode} PROPERTIES TIMEOUT 600)
endforeach()
add_test(NAME package/implementation_lists
         COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_LIST_DIR}/implementation_check.cmake)
add_test(NAME package/header_text
         COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_LIST_DIR}/header_text_check.cmake)

# The all-inline way: <quadrants/quadrants.hpp> alone, nothing of Quadrants compiled ahead.
# With the test programs' compiler (QD_TEST_CXX, tests/CMakeLists.txt): the whole implementation
# in one TU, 54.7 CPU s with g++ 12 at -O0; the tree's compiler builds the same code as the library.
add_executable(package_all_inline_test ${CMAKE_CURRENT_LIST_DIR}/all_inline_test.cpp)
target_link_libraries(package_all_inline_test PRIVATE qd_all_inline qd_doctest_main)
if(QD_TEST_CXX)
  qd_use_test_cxx(package_all_inline_test)
endif()
add_test(NAME package/all_inline COMMAND package_all_inline_test)

# The emulated GPUs as installed: bin/qd-with-emulated-gpu runs a program on the
# libraries installed beside it, with no source or build tree (the program asks the
# emulation itself, and fails if what it is given is not the emulation).
if(TARGET qd_emulated_gpus AND TARGET backend_emulated_gpu_test)
  add_test(NAME package/emulated_gpus
           COMMAND ${CMAKE_COMMAND} -DMODE=emulated_gpus -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBUILD_DIR=${PROJECT_BINARY_DIR}
                   -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/package -DCXX=${CMAKE_CXX_COMPILER}
                   -DPROGRAM=$<TARGET_FILE:backend_emulated_gpu_test> -P ${CMAKE_CURRENT_LIST_DIR}/check.cmake)
  set_tests_properties(package/emulated_gpus PROPERTIES TIMEOUT 300 LABELS emulated_gpu)
endif()
