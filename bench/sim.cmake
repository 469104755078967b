# bench/sim_bench: the simulation library (issue 26) against hand-written C++ and the
# standard library, side by side in one run.
add_executable(sim_bench ${CMAKE_CURRENT_SOURCE_DIR}/sim_bench.cpp)
target_link_libraries(sim_bench PRIVATE quadrants::quadrants fmt::fmt)
# std::sort and friends with the flags generated code gets (-O2, no contraction).
target_compile_options(sim_bench PRIVATE -O2 -ffp-contract=off -fno-math-errno)
add_dependencies(benchmarks sim_bench)
