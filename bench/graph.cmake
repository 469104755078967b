# bench/graph_bench: a do_while pass's host cost against a hand-written host loop, and
# the recompile after editing one construct of a do_while body (issue 13).
add_executable(graph_bench ${CMAKE_CURRENT_SOURCE_DIR}/graph_bench.cpp)
target_link_libraries(graph_bench PRIVATE quadrants::quadrants fmt::fmt)
add_dependencies(benchmarks graph_bench)

# bench/device_graph_bench: graph replay against individual launches, and the conditional
# WHILE node against the host loop, on a GPU (labelled when the GPU is emulated).
add_executable(device_graph_bench ${CMAKE_CURRENT_SOURCE_DIR}/device_graph_bench.cpp)
target_link_libraries(device_graph_bench PRIVATE quadrants::quadrants fmt::fmt)
add_dependencies(benchmarks device_graph_bench)
