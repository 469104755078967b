# bench/mesh_bench: a mesh Laplacian (qd::mesh_for / qd::for_each) against the same
# loop written by hand over CSR arrays, on the CPU (issue 14).
add_executable(mesh_bench ${CMAKE_CURRENT_SOURCE_DIR}/mesh_bench.cpp)
target_link_libraries(mesh_bench PRIVATE quadrants::quadrants fmt::fmt)
add_dependencies(benchmarks mesh_bench)
target_include_directories(mesh_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests)
