# Misuse that C++ can catch must not compile; each case also compiles when fixed.
get_target_property(qd_boost_includes Boost::headers INTERFACE_INCLUDE_DIRECTORIES)
file(GLOB qd_compile_fail_cases ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
foreach(case ${qd_compile_fail_cases})
  get_filename_component(name ${case} NAME_WE)
  add_test(NAME compile_fail/${name}
           COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DSRC=${case}
                   "-DINCLUDES=${PROJECT_SOURCE_DIR}/include;${qd_boost_includes}"
                   -P ${CMAKE_CURRENT_LIST_DIR}/check.cmake)
endforeach()
