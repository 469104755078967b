# bench/remote_bench: the remote cache tier on a redis-server it starts (issue 17).
add_executable(remote_bench ${CMAKE_CURRENT_SOURCE_DIR}/remote_bench.cpp)
target_link_libraries(remote_bench PRIVATE quadrants::quadrants fmt::fmt)
target_include_directories(remote_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests)
add_dependencies(benchmarks remote_bench)
