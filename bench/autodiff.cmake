# bench/autodiff_bench (issue 12): adjoint against forward run and compile times, and
# gradient accuracy against finite differences.
add_executable(autodiff_bench ${CMAKE_CURRENT_SOURCE_DIR}/autodiff_bench.cpp)
target_link_libraries(autodiff_bench PRIVATE quadrants::quadrants)
add_dependencies(benchmarks autodiff_bench)
