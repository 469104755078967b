# Differential fuzzing (docs/testing.md): generated kernels run whole, split and on the
# reference backend and compared bitwise; the cases it found, replayed; the campaign.
# The machinery (generator, runs and checks, shrinker, case files) compiled once for all of them.
add_library(qd_fuzz_support STATIC ${CMAKE_CURRENT_LIST_DIR}/fuzz_support.cpp)
target_link_libraries(qd_fuzz_support PUBLIC quadrants::quadrants fmt::fmt)
target_include_directories(qd_fuzz_support PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
qd_add_test(fuzz differential LIBS qd_fuzz_support)
set_tests_properties(fuzz/differential PROPERTIES TIMEOUT 900)
if(QD_SANITIZE)
  # A sample here (differential_test.cpp, sample_size); make test runs the full batches in the main tree.
  set_property(TEST fuzz/differential APPEND PROPERTY ENVIRONMENT "QD_FUZZ_SAMPLE=400")
endif()
qd_add_test(fuzz regressions LIBS qd_fuzz_support)
target_compile_definitions(fuzz_regressions_test PRIVATE QD_FUZZ_REGRESSIONS="${CMAKE_CURRENT_LIST_DIR}/regressions")

# make fuzz: qd_fuzz runs an open-ended campaign and prints its figures.
add_executable(qd_fuzz ${CMAKE_CURRENT_LIST_DIR}/fuzz_campaign.cpp)
target_link_libraries(qd_fuzz PRIVATE quadrants::quadrants qd_fuzz_support fmt::fmt)
target_include_directories(qd_fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})

# The cache entry reader and the remote tier's reply reader under libFuzzer (clang;
# -DQD_LIBFUZZER=ON, make sanitize): a seed corpus first, then QD_LIBFUZZER_SECONDS of
# fuzzing each (default 60).
if(QD_LIBFUZZER)
  set(QD_LIBFUZZER_SECONDS 60 CACHE STRING "How long each ctest libFuzzer run lasts")
  # qd_add_libfuzzer(<name>): tests/fuzz/<name>_fuzzer.cpp; fuzz/<name>_seeds writes its
  # corpus, fuzz/<name>_libfuzzer fuzzes from it.
  function(qd_add_libfuzzer name)
    set(target ${name}_fuzzer)
    add_executable(${target} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${target}.cpp)
    target_link_libraries(${target} PRIVATE qd_all_inline)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined)
    set(corpus ${CMAKE_CURRENT_BINARY_DIR}/${name}_corpus)
    add_test(NAME fuzz/${name}_seeds COMMAND ${target} -qd_write_seeds=${corpus}/seeds)
    add_test(NAME fuzz/${name}_libfuzzer
             COMMAND ${CMAKE_COMMAND} -E chdir ${corpus}
                     $<TARGET_FILE:${target}> -max_total_time=${QD_LIBFUZZER_SECONDS} -timeout=5
                     -rss_limit_mb=2048 -print_final_stats=1 ${corpus}/seeds)
    qd_test_programs(fuzz/${name}_seeds ${target})
    qd_test_programs(fuzz/${name}_libfuzzer ${target})
    set_tests_properties(fuzz/${name}_seeds PROPERTIES FIXTURES_SETUP ${name}_corpus)
    set_tests_properties(fuzz/${name}_libfuzzer PROPERTIES FIXTURES_REQUIRED ${name}_corpus
                         TIMEOUT 900 LABELS libfuzzer)
  endfunction()
  qd_add_libfuzzer(cache_entry)
  qd_add_libfuzzer(remote_reply)
endif()

# The GPU batch: registered under the emulated GPUs (tests/emulated_gpus.cmake), whose
# blocks can run in order (on a real GPU, math functions differ by ulps), and on Vulkan
# (lavapipe, issue 25): 60 kernels from seeds of their own, every top-level loop
# serialized and the generator's libm functions left out (gpu_batch_test.cpp says why).
add_executable(fuzz_gpu_batch_test ${CMAKE_CURRENT_LIST_DIR}/gpu_batch_test.cpp)
target_link_libraries(fuzz_gpu_batch_test PRIVATE quadrants::quadrants qd_fuzz_support qd_doctest_main fmt::fmt)
target_include_directories(fuzz_gpu_batch_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(fuzz_gpu_batch_test PRIVATE QD_FUZZ_GPU_REGRESSIONS="${CMAKE_CURRENT_LIST_DIR}/gpu_regressions")
add_test(NAME fuzz/vulkan_batch COMMAND fuzz_gpu_batch_test)
qd_test_programs(fuzz/vulkan_batch fuzz_gpu_batch_test)
set_tests_properties(fuzz/vulkan_batch PROPERTIES TIMEOUT 600
                     ENVIRONMENT "QD_FUZZ_GPU=vulkan;QD_FUZZ_GPU_KERNELS=60;QD_FUZZ_GPU_SEED=3200001")

# Differentiated generated kernels (issue 12): refused cleanly, or the same adjoint results on the reference and the CPU.
qd_add_test(fuzz adjoint LIBS qd_fuzz_support)
set_tests_properties(fuzz/adjoint PROPERTIES TIMEOUT 600)

# The differential autodiff fuzzer (issue 27): generated kernels and tapes, refused or equal to central differences.
qd_add_test(fuzz autodiff_fd)
