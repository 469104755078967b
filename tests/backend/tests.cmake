qd_add_test(backend thread_pool)
qd_add_test(backend cpu_compiler)
qd_add_test(backend reference)
# GPU backends: the NVRTC and hipRTC wrappers, choosing a GPU backend, every suite
# kernel compiled in compile-only mode (all run wherever the compilers are
# installed, GPU or not; each case once per compiler), and the per-backend suite
# (GPU instances skip without one).
qd_add_test(backend gpu_compiler)
qd_add_test(backend gpu_device)
# The suite's kernels compiled for the compile-only round trips (compile_only_support.cpp),
# a translation unit of its own that builds in parallel with the test's.
add_library(qd_test_compile_only STATIC ${CMAKE_CURRENT_SOURCE_DIR}/backend/compile_only_support.cpp)
target_link_libraries(qd_test_compile_only PUBLIC quadrants::quadrants doctest::doctest fmt::fmt)
target_include_directories(qd_test_compile_only PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
# One test per compiler (the longest of the suite: ~75 and ~120 CPU s), so that they run in parallel.
qd_add_test(backend gpu_compile_only LIBS qd_test_compile_only PER_ARCH cuda amdgpu)
# The suite's Vulkan instances (lavapipe) are a test of their own, backend/gpu_suite_vulkan.
qd_add_test(backend gpu_suite SOURCES backend/gpu_suite_values.cpp backend/gpu_suite_graphs.cpp
            backend/gpu_suite_math.cpp APART vulkan)
# Vulkan (lavapipe in CI, a real driver on the CPU): the loader, shaderc and device with
# hand-written shaders; the GLSL emitter's tasks validated by spirv-val and run against
# the reference interpreter. Each reports itself skipped where no Vulkan device is found.
qd_add_test(backend vulkan_device)
qd_add_test(backend vulkan_emitter)
# qd::arch::vulkan through qd::init: the CPU's results, the split, compile_only, fallback.
qd_add_test(backend vulkan_runtime)
