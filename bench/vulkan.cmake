# bench/vulkan_bench: the Vulkan backend on this machine's driver (lavapipe here: CPU-emulated
# Vulkan). shaderc in-process against glslangValidator plus pipeline creation, and generated
# saxpy and stencil shaders against hand-written GLSL (docs/benchmarks.md).
add_executable(vulkan_bench ${CMAKE_CURRENT_SOURCE_DIR}/vulkan_bench.cpp)
target_link_libraries(vulkan_bench PRIVATE quadrants::quadrants fmt::fmt)
add_dependencies(benchmarks vulkan_bench)
