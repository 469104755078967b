# bench/cache_bench: warm hit and store of a 50 KB artifact against the issue's targets
# (0.1 ms and 1 ms), at zstd levels 1-3, next to a bare open+read+decompress.
add_executable(cache_bench ${CMAKE_CURRENT_SOURCE_DIR}/cache_bench.cpp)
target_link_libraries(cache_bench PRIVATE quadrants::quadrants fmt::fmt qd_deps::zstd)
add_dependencies(benchmarks cache_bench)
