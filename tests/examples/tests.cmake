# The demo as a user runs it: `make demo` twice, and QD_ARCH honoured.
add_test(NAME examples/heat_diffusion
         COMMAND ${CMAKE_COMMAND} -DDEMO=$<TARGET_FILE:heat_diffusion> -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/demo
                 -P ${CMAKE_CURRENT_LIST_DIR}/demo_check.cmake)
set_tests_properties(examples/heat_diffusion PROPERTIES TIMEOUT 600)

# The N-body example (qd::vec3f, atomic demotion, a reduction) checks itself against plain C++.
add_test(NAME examples/nbody COMMAND nbody 256 5)
set_tests_properties(examples/nbody PROPERTIES ENVIRONMENT "XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/cache/nbody"
                                               PASS_REGULAR_EXPRESSION "agrees with plain C\\+\\+")
# The autodiff example (issue 12): it exits non-zero unless the fitted stiffness is the true one.
add_test(NAME examples/spring_fit COMMAND spring_fit)
set_tests_properties(examples/spring_fit PROPERTIES PASS_REGULAR_EXPRESSION "fitted stiffness 4\\.0000" TIMEOUT 300)
# The SPH example (qd::hash_grid, qd::solve, qd::algorithms::reduce and reduce_max) checks
# itself against the same steps in plain C++.
add_test(NAME examples/sph COMMAND sph 1000 8)
set_tests_properties(examples/sph PROPERTIES ENVIRONMENT "XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/cache/sph"
                                             PASS_REGULAR_EXPRESSION "agrees with plain C\\+\\+" TIMEOUT 300)
