# bench/cache_flow_bench: warm-process start-up and incremental recompiles.
add_executable(cache_flow_bench ${CMAKE_CURRENT_SOURCE_DIR}/cache_flow_bench.cpp)
target_link_libraries(cache_flow_bench PRIVATE quadrants::quadrants fmt::fmt)
add_dependencies(benchmarks cache_flow_bench)
