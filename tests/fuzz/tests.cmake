# Differential fuzzing (docs/testing.md): generated kernels run whole, split and on the
# reference backend and compared bitwise; the cases it found, replayed; the campaign.
# The machinery (generator, runs and checks, shrinker, case files) compiled once for all of them.
add_library(qd_fuzz_support STATIC ${CMAKE_CURRENT_LIST_DIR}/fuzz_support.cpp)
target_link_libraries(qd_fuzz_support PUBLIC quadrants::quadrants fmt::fmt)
target_include_directories(qd_fuzz_support PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
qd_add_test(fuzz differential LIBS qd_fuzz_support)
set_tests_properties(fuzz/differential PROPERTIES TIMEOUT 900)
qd_add_test(fuzz regressions LIBS qd_fuzz_support)
target_compile_definitions(fuzz_regressions_test PRIVATE QD_FUZZ_REGRESSIONS="${CMAKE_CURRENT_LIST_DIR}/regressions")

# make fuzz: qd_fuzz runs an open-ended campaign and prints its figures.
add_executable(qd_fuzz ${CMAKE_CURRENT_LIST_DIR}/fuzz_campaign.cpp)
target_link_libraries(qd_fuzz PRIVATE quadrants::quadrants qd_fuzz_support fmt::fmt)
target_include_directories(qd_fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})

# The cache entry reader under libFuzzer (clang; -DQD_LIBFUZZER=ON, make sanitize):
# a seed corpus first, then QD_LIBFUZZER_SECONDS of fuzzing (default 60).
if(QD_LIBFUZZER)
  add_executable(cache_entry_fuzzer ${CMAKE_CURRENT_LIST_DIR}/cache_entry_fuzzer.cpp)
  target_link_libraries(cache_entry_fuzzer PRIVATE qd_all_inline)
  target_compile_options(cache_entry_fuzzer PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
  target_link_options(cache_entry_fuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
  set(QD_LIBFUZZER_SECONDS 60 CACHE STRING "How long the ctest libFuzzer run lasts")
  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/cache_entry_corpus)
  add_test(NAME fuzz/cache_entry_seeds COMMAND cache_entry_fuzzer -qd_write_seeds=${corpus}/seeds)
  add_test(NAME fuzz/cache_entry_libfuzzer
           COMMAND ${CMAKE_COMMAND} -E chdir ${corpus}
                   $<TARGET_FILE:cache_entry_fuzzer> -max_total_time=${QD_LIBFUZZER_SECONDS} -timeout=5
                   -rss_limit_mb=2048 -print_final_stats=1 ${corpus}/seeds)
  set_tests_properties(fuzz/cache_entry_seeds PROPERTIES FIXTURES_SETUP cache_entry_corpus)
  set_tests_properties(fuzz/cache_entry_libfuzzer PROPERTIES FIXTURES_REQUIRED cache_entry_corpus
                       TIMEOUT 900 LABELS libfuzzer)
endif()

# The GPU batch: registered only under the emulated GPUs (tests/emulated_gpus.cmake),
# whose blocks can run in order; on a real GPU, math functions differ by ulps.
add_executable(fuzz_gpu_batch_test ${CMAKE_CURRENT_LIST_DIR}/gpu_batch_test.cpp)
target_link_libraries(fuzz_gpu_batch_test PRIVATE quadrants::quadrants qd_fuzz_support qd_doctest_main fmt::fmt)
target_include_directories(fuzz_gpu_batch_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})

# Differentiated generated kernels (issue 12): refused cleanly, or the same adjoint results on the reference and the CPU.
qd_add_test(fuzz adjoint LIBS qd_fuzz_support)
set_tests_properties(fuzz/adjoint PROPERTIES TIMEOUT 600)
