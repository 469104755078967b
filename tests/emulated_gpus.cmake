# The GPU backends on the emulated GPUs (emulation/, docs/testing.md "Emulated GPUs"):
# test executables registered a second time, as emulated_<api>/<name>, with the
# variables scripts/with-emulated-gpu sets. A GPU test that reports itself skipped
# fails here: under the emulation the GPU is always there.
if(NOT TARGET qd_emulated_gpus)
  return()
endif()

set(qd_emulated_cuda_env "QD_CUDA_PATH=$<TARGET_FILE:qd_emulated_cuda>;QD_NVRTC_PATH=$<TARGET_FILE:qd_emulated_nvrtc>")
set(qd_emulated_amdgpu_env "QD_HIP_PATH=$<TARGET_FILE:qd_emulated_hip>;QD_HIPRTC_PATH=$<TARGET_FILE:qd_emulated_hiprtc>")
set(qd_emulated_gpus_env ${qd_emulated_cuda_env} ${qd_emulated_amdgpu_env})
set(qd_emulated_cuda_skip "skipped on cuda")
set(qd_emulated_amdgpu_skip "skipped on amdgpu")
set(qd_emulated_gpus_skip "skipped on (cuda|amdgpu)")

# qd_add_emulated_test(<api: cuda|amdgpu|gpus (both)> <name> <target> [ARGS ...] [ENV ...] [TIMEOUT s]
#                      [FAIL regex]): FAIL is what else in the output fails the test.
function(qd_add_emulated_test api name target)
  cmake_parse_arguments(ARG "" "TIMEOUT;FAIL" "ARGS;ENV" ${ARGN})
  set(test emulated_${api}/${name})
  add_test(NAME ${test} COMMAND ${target} ${ARG_ARGS})
  qd_test_programs(${test} ${target} qd_emulated_gpus)  # and the emulated libraries
  # The emulated kernels at -O1 (QD_EMULATED_GPU_CXXFLAGS, after the emulation's -O2): the host
  # compiles them in about 15 % less time, and what runs is the same well-defined code
  # (the CPU backend runs it at -O2 in the other tests; docs/testing.md).
  set(env "XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/cache/emulated_${api}_${name}" "QD_LOG_LEVEL=warn"
          "QD_EMULATED_GPU_CXXFLAGS=-O1" ${qd_emulated_${api}_env} ${ARG_ENV})
  set(fail "${qd_emulated_${api}_skip}")
  if(ARG_FAIL)
    set(fail "${fail}|${ARG_FAIL}")
  endif()
  set_tests_properties(${test} PROPERTIES ENVIRONMENT "${env}" FAIL_REGULAR_EXPRESSION "${fail}"
                                          LABELS emulated_gpu)
  if(ARG_TIMEOUT)
    set_tests_properties(${test} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()
endfunction()

set(qd_fuzz_gpu_seed_cuda 3000001)
set(qd_fuzz_gpu_seed_amdgpu 3100001)
# The per-backend suite's instances for each GPU. On CUDA each program is also compiled by
# the real NVRTC (~25 CPU s in all); on AMD the real hipRTC is not asked (its fixed ~140 ms a
# program would add ~115 CPU s, and backend/gpu_compile_only_amdgpu already compiles every
# suite kernel with it, split and whole, bounds checks on and off).
qd_add_emulated_test(cuda gpu_suite backend_gpu_suite_test ARGS "--test-case=*<on_cuda>*")
qd_add_emulated_test(amdgpu gpu_suite backend_gpu_suite_test ARGS "--test-case=*<on_amdgpu>*"
                     ENV "QD_EMULATED_GPU_REAL_HIPRTC=off")
foreach(api cuda amdgpu)
  # The fuzzer's GPU batch, blocks in order on one host thread (deterministic): 35 kernels
  # per GPU (~1 CPU s each), each GPU from its own seeds, so the two see 70 different
  # kernels (QD_FUZZ_GPU_KERNELS=200 for the longer look).
  # The real compilers are left out here: they already compile every suite kernel in the
  # compile-only tests, and would double this batch's time (hipRTC: ~140 ms a program).
  qd_add_emulated_test(${api} fuzz_batch fuzz_gpu_batch_test TIMEOUT 900
                       ENV "QD_FUZZ_GPU=${api}" "QD_FUZZ_GPU_KERNELS=35" "QD_FUZZ_GPU_SEED=${qd_fuzz_gpu_seed_${api}}"
                           "QD_EMULATED_GPU_THREADS=1" "QD_EMULATED_GPU_REAL_NVRTC=off" "QD_EMULATED_GPU_REAL_HIPRTC=off")
endforeach()

# The device algorithms, the hash grid and deterministic reductions (their GPU instances).
# The real NVRTC checks their programs on the CUDA instance; the AMD instance leaves the
# real hipRTC out (its programs are the same GPU source; at about 0.6 s a program here it
# made the algorithms test 3.7 times slower).
foreach(api cuda amdgpu)
  set(real "QD_EMULATED_GPU_REAL_HIPRTC=off")
  qd_add_emulated_test(${api} algorithms algorithms_algorithms_test ARGS "--test-case=*<on_${api}>*" ENV ${real})
  qd_add_emulated_test(${api} hash_grid algorithms_hash_grid_test ARGS "--test-case=*<on_${api}>*" ENV ${real})
  qd_add_emulated_test(${api} reductions runtime_reductions_test ARGS "--test-case=*<on_${api}>*" ENV ${real})
endforeach()

# Graph kernels on a CUDA driver older than 12.3 (no conditional nodes): do_while bodies
# are device graphs replayed by the host loop (the suite's own instance covers 12.3+).
qd_add_emulated_test(cuda graph_host_loop backend_gpu_suite_test ARGS "--test-case=*graph*<on_cuda>*"
                     ENV "QD_EMULATED_CUDA_DRIVER_VERSION=12020")

# A driver that says 12.3 but refuses conditional nodes: the first do_while warns and
# falls back to the host loop; the results stay plain C++'s.
qd_add_emulated_test(cuda graph_loop_refused backend_gpu_suite_test
                     ARGS "--test-case=*loop while their flags are set*<on_cuda>*,*graph::parallel*<on_cuda>*"
                     ENV "QD_EMULATED_CUDA_REFUSE_CONDITIONAL=1" "QD_LOG_LEVEL=warn" FAIL "Status: FAILURE")
set_tests_properties(emulated_cuda/graph_loop_refused PROPERTIES  # the exit status is then not read: FAIL is
                     PASS_REGULAR_EXPRESSION "could not be recorded as a device loop")

# A driver that refuses to give a kernel node new parameters in place: each ping-pong
# launch records its graph again; the results stay plain C++'s.
qd_add_emulated_test(cuda graph_update_refused backend_gpu_suite_test ARGS "--test-case=*ping-pong*<on_cuda>*"
                     ENV "QD_EMULATED_CUDA_REFUSE_NODE_UPDATES=1")

# The demo on each GPU, as a user runs it (QD_ARCH honoured; a fallback to the CPU fails).
if(TARGET heat_diffusion)
  foreach(api cuda amdgpu)
    qd_add_emulated_test(${api} heat_diffusion heat_diffusion ENV "QD_ARCH=${api}" FAIL "falling back|arch = cpu")
  endforeach()
endif()

# The emulation itself: bad input as the drivers answer it, streams, barriers, traps.
add_executable(backend_emulated_gpu_test ${CMAKE_CURRENT_SOURCE_DIR}/backend/emulated_gpu_test.cpp)
target_link_libraries(backend_emulated_gpu_test PRIVATE quadrants::quadrants qd_doctest_main fmt::fmt)
target_include_directories(backend_emulated_gpu_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
qd_add_emulated_test(gpus emulation backend_emulated_gpu_test)

# The GPU benchmark's correctness check: generated against hand-written CUDA, same results.
if(TARGET gpu_run_bench)
  qd_add_emulated_test(cuda gpu_run_bench gpu_run_bench ARGS --check)
endif()

# Diagnostics (issue 14) through the GPU backends: coverage probes in device memory, .cu/.hip dumps.
foreach(api cuda amdgpu)
  qd_add_emulated_test(${api} coverage runtime_coverage_test ARGS "--test-case=*<on_${api}>*")
endforeach()

# The device graph benchmark, briefly, on each emulated GPU: it runs and says it is emulated.
if(TARGET device_graph_bench)
  qd_add_emulated_test(cuda device_graph_bench device_graph_bench ARGS 1 20 20)
  qd_add_emulated_test(amdgpu device_graph_bench device_graph_bench ARGS 1 20 20 --amdgpu)
  set_tests_properties(emulated_cuda/device_graph_bench emulated_amdgpu/device_graph_bench PROPERTIES
                       PASS_REGULAR_EXPRESSION "EMULATED GPU")
endif()
