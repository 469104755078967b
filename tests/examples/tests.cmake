# The demo as a user runs it: `make demo` twice, and QD_ARCH honoured.
add_test(NAME examples/heat_diffusion
         COMMAND ${CMAKE_COMMAND} -DDEMO=$<TARGET_FILE:heat_diffusion> -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/demo
                 -P ${CMAKE_CURRENT_LIST_DIR}/demo_check.cmake)
set_tests_properties(examples/heat_diffusion PROPERTIES TIMEOUT 600)

# The N-body example (qd::vec3f, atomic demotion, a reduction) checks itself against plain C++.
set(qd_nbody_args 256 5)
add_test(NAME examples/nbody COMMAND nbody ${qd_nbody_args})
set_tests_properties(examples/nbody PROPERTIES ENVIRONMENT "XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/cache/nbody"
                                               PASS_REGULAR_EXPRESSION "agrees with plain C\\+\\+")
# The autodiff example (issue 12): it exits non-zero unless the fitted stiffness is the true one.
add_test(NAME examples/spring_fit COMMAND spring_fit)
set_tests_properties(examples/spring_fit PROPERTIES PASS_REGULAR_EXPRESSION "fitted stiffness 4\\.0000" TIMEOUT 300)
# The SPH example (qd::hash_grid, qd::solve, qd::algorithms::reduce and reduce_max) checks
# itself against the same steps in plain C++.
set(qd_sph_args 1000 8)
add_test(NAME examples/sph COMMAND sph ${qd_sph_args})
set_tests_properties(examples/sph PROPERTIES ENVIRONMENT "XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/cache/sph"
                                             PASS_REGULAR_EXPRESSION "agrees with plain C\\+\\+" TIMEOUT 300)

# The demo and the examples on Vulkan (lavapipe in CI: issue 25), the same programs with
# QD_ARCH=vulkan and QD_ENABLE_FALLBACK=0: a machine without a Vulkan device fails them
# (qd::init throws) instead of running them on the CPU, and each must also say it ran on
# vulkan. Each has its own cache.
add_test(NAME examples/heat_diffusion_vulkan
         COMMAND ${CMAKE_COMMAND} -DDEMO=$<TARGET_FILE:heat_diffusion> -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/demo_vulkan
                 -DARCH=vulkan -DCOMPILER=shaderc -P ${CMAKE_CURRENT_LIST_DIR}/demo_check.cmake)
set_tests_properties(examples/heat_diffusion_vulkan PROPERTIES TIMEOUT 600)
# qd_add_vulkan_example(<name> <pass regex> [args...]): the regex must also find "on vulkan".
function(qd_add_vulkan_example name pass)
  add_test(NAME examples/${name}_vulkan COMMAND ${name} ${ARGN})
  set_tests_properties(examples/${name}_vulkan PROPERTIES
                       ENVIRONMENT "XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/cache/${name}_vulkan;QD_ARCH=vulkan;QD_ENABLE_FALLBACK=0"
                       PASS_REGULAR_EXPRESSION "${pass}" TIMEOUT 300)
endfunction()
qd_add_vulkan_example(nbody "on vulkan(.|\n)*agrees with plain C\\+\\+" ${qd_nbody_args})
qd_add_vulkan_example(spring_fit "fitted stiffness 4\\.0000[^\n]* on vulkan")
qd_add_vulkan_example(sph "on vulkan(.|\n)*agrees with plain C\\+\\+" ${qd_sph_args})
