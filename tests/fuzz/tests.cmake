# Differential fuzzing (docs/testing.md): generated kernels run whole, split and on the
# reference backend and compared bitwise; the cases it found, replayed; the campaign.
qd_add_test(fuzz differential)
set_tests_properties(fuzz/differential PROPERTIES TIMEOUT 900)
qd_add_test(fuzz regressions)
target_compile_definitions(fuzz_regressions_test PRIVATE QD_FUZZ_REGRESSIONS="${CMAKE_CURRENT_LIST_DIR}/regressions")

# make fuzz: qd_fuzz runs an open-ended campaign and prints its figures.
add_executable(qd_fuzz ${CMAKE_CURRENT_LIST_DIR}/fuzz_campaign.cpp)
target_link_libraries(qd_fuzz PRIVATE quadrants::quadrants fmt::fmt)
target_include_directories(qd_fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
