# bench/cpu_bench: generated CPU code against hand-written C++, launch overhead,
# and compile times (a 16-construct kernel; a user translation unit).
add_executable(cpu_bench ${CMAKE_CURRENT_SOURCE_DIR}/cpu_bench.cpp)
target_link_libraries(cpu_bench PRIVATE quadrants::quadrants fmt::fmt)
get_target_property(QD_BENCH_BOOST_INCLUDES Boost::headers INTERFACE_INCLUDE_DIRECTORIES)
target_compile_definitions(cpu_bench PRIVATE
  QD_BENCH_CXX="${CMAKE_CXX_COMPILER}"
  QD_BENCH_INCLUDE="${PROJECT_SOURCE_DIR}/include"
  QD_BENCH_USER_TU="${CMAKE_CURRENT_SOURCE_DIR}/user_tu.cpp"
  QD_BENCH_IMPLEMENTATION_TU="${PROJECT_SOURCE_DIR}/src/implementation.cpp")
add_dependencies(benchmarks cpu_bench)

# bench/vec_bench: an N-body step with qd::vec3f against a hand-written vector struct,
# and atomic demotion (issue 11).
add_executable(vec_bench ${CMAKE_CURRENT_SOURCE_DIR}/vec_bench.cpp)
target_link_libraries(vec_bench PRIVATE quadrants::quadrants fmt::fmt)
add_dependencies(benchmarks vec_bench)

# bench/trace_bench: trace time of a 64-construct kernel (issue 14's source locations).
add_executable(trace_bench ${CMAKE_CURRENT_SOURCE_DIR}/trace_bench.cpp)
target_link_libraries(trace_bench PRIVATE quadrants::quadrants fmt::fmt)
add_dependencies(benchmarks trace_bench)

# bench/coverage_bench: kernel_coverage's run-time cost on a stencil and an N-body step.
add_executable(coverage_bench ${CMAKE_CURRENT_SOURCE_DIR}/coverage_bench.cpp)
target_link_libraries(coverage_bench PRIVATE quadrants::quadrants fmt::fmt)
add_dependencies(benchmarks coverage_bench)

# bench/math_bench: the third wave's math functions and an atomic_cas-loop counter
# against the same std:: calls and std::atomic by hand.
add_executable(math_bench ${CMAKE_CURRENT_SOURCE_DIR}/math_bench.cpp)
target_link_libraries(math_bench PRIVATE quadrants::quadrants fmt::fmt)
add_dependencies(benchmarks math_bench)

# bench/scatter_bench: a particle-in-grid f32 scatter against plain C++ on one thread and
# std::atomic_ref on two (issue 30).
add_executable(scatter_bench ${CMAKE_CURRENT_SOURCE_DIR}/scatter_bench.cpp)
target_link_libraries(scatter_bench PRIVATE quadrants::quadrants fmt::fmt)
add_dependencies(benchmarks scatter_bench)

# bench/engine_bench: an engine's start, 100 kernels x 50 constructs, cold and warm, one
# process per measurement (issue 30).
add_executable(engine_bench ${CMAKE_CURRENT_SOURCE_DIR}/engine_bench.cpp)
target_link_libraries(engine_bench PRIVATE quadrants::quadrants fmt::fmt)
target_compile_definitions(engine_bench PRIVATE QD_ENGINE_PEER_SCRIPT="${CMAKE_CURRENT_SOURCE_DIR}/engine_peer.py")
add_dependencies(benchmarks engine_bench)
