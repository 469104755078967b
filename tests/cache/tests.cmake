# Cache layer: keys, the entry format, the store (in one process and across several), the
# qd-cache tool, and the header-only mode. Each test makes its own temporary cache roots.
qd_add_test(cache key LIBS qd_deps::xxhash)
qd_add_test(cache entry LIBS qd_deps::xxhash qd_deps::zstd)
qd_add_test(cache records)
qd_add_test(cache store LIBS qd_deps::xxhash)
qd_add_test(cache remote)  # the remote tier against a redis-server it starts (skipped without one)
qd_add_test(cache tier_list LIBS qd_deps::xxhash)  # the lookup protocol over the tiers, with a third tier of its own
qd_add_test(cache remote_attacks)  # fake servers that trickle, flood, nest, hang; planted locks; fork()

# Helper for the multi-process tests: saves, loads, locks, and gets killed on purpose.
add_executable(cache_store_worker ${CMAKE_CURRENT_SOURCE_DIR}/cache/store_worker.cpp)
target_link_libraries(cache_store_worker PRIVATE quadrants::quadrants)
target_include_directories(cache_store_worker PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
qd_add_test(cache store_processes)
add_dependencies(cache_store_processes_test cache_store_worker)
target_compile_definitions(cache_store_processes_test PRIVATE QD_STORE_WORKER="$<TARGET_FILE:cache_store_worker>")

if(TARGET qd-cache)
  qd_add_test(cache qd_cache_tool)
  add_dependencies(cache_qd_cache_tool_test qd-cache)
  target_compile_definitions(cache_qd_cache_tool_test PRIVATE QD_CACHE_TOOL="$<TARGET_FILE:qd-cache>")
  add_dependencies(cache_remote_test qd-cache)
  target_compile_definitions(cache_remote_test PRIVATE QD_CACHE_TOOL="$<TARGET_FILE:qd-cache>")
  add_dependencies(cache_remote_attacks_test qd-cache)
  target_compile_definitions(cache_remote_attacks_test PRIVATE QD_CACHE_TOOL="$<TARGET_FILE:qd-cache>")
endif()

# The same store used in the all-inline header-only mode (no compiled library).
add_executable(cache_header_only_test ${CMAKE_CURRENT_SOURCE_DIR}/cache/header_only_test.cpp)
target_link_libraries(cache_header_only_test PRIVATE qd_all_inline qd_doctest_main)
target_include_directories(cache_header_only_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME cache/header_only COMMAND cache_header_only_test)
qd_test_programs(cache/header_only cache_header_only_test)

# The cache layer without the remote tier's libraries (header-only, no QD_WITH_REMOTE_CACHE).
add_executable(cache_remote_unsupported_test ${CMAKE_CURRENT_SOURCE_DIR}/cache/remote_unsupported_test.cpp)
target_link_libraries(cache_remote_unsupported_test PRIVATE qd_doctest_main fmt::fmt qd_deps::zstd qd_deps::xxhash
                                                            Threads::Threads)
target_include_directories(cache_remote_unsupported_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${QD_INCLUDE_DIR})
target_compile_features(cache_remote_unsupported_test PRIVATE cxx_std_20)
add_test(NAME cache/remote_unsupported COMMAND cache_remote_unsupported_test)
qd_test_programs(cache/remote_unsupported cache_remote_unsupported_test)
