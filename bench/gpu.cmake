# bench/gpu_compile_bench: per-offload caching with NVRTC and hipRTC in compile-only
# mode (runs without a GPU). bench/gpu_run_bench: generated CUDA against hand-written
# CUDA, and launch overhead, on a GPU (reports a skip without one; --check: results
# only, on the emulated GPU in ctest). bench/emulated_gpu_bench: a launch on the
# emulated GPUs against the CPU backend (run under scripts/with-emulated-gpu).
# bench/gpu_sass_bench: static SASS (and gfx90a) instruction counts of generated kernels
# against hand-written CUDA, without a GPU (skips without nvdisasm / llvm-objdump).
foreach(name gpu_compile_bench gpu_run_bench emulated_gpu_bench gpu_sass_bench)
  add_executable(${name} ${CMAKE_CURRENT_SOURCE_DIR}/${name}.cpp)
  target_link_libraries(${name} PRIVATE quadrants::quadrants fmt::fmt)
  add_dependencies(benchmarks ${name})
endforeach()
