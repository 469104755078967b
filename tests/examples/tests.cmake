# The demo as a user runs it: `make demo` twice, and QD_ARCH honoured.
add_test(NAME examples/heat_diffusion
         COMMAND ${CMAKE_COMMAND} -DDEMO=$<TARGET_FILE:heat_diffusion> -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/demo
                 -P ${CMAKE_CURRENT_LIST_DIR}/demo_check.cmake)
set_tests_properties(examples/heat_diffusion PROPERTIES TIMEOUT 600)

# The autodiff example (issue 12): it exits non-zero unless the fitted stiffness is the true one.
add_test(NAME examples/spring_fit COMMAND spring_fit)
set_tests_properties(examples/spring_fit PROPERTIES PASS_REGULAR_EXPRESSION "fitted stiffness 4\\.0000" TIMEOUT 300)
