# Cache layer: keys, the entry format, the store (in one process and across several), the
# qd-cache tool, and the header-only mode. Each test makes its own temporary cache roots.
qd_add_test(cache key LIBS qd_deps::xxhash)
qd_add_test(cache entry LIBS qd_deps::xxhash qd_deps::zstd)
qd_add_test(cache records)
qd_add_test(cache store LIBS qd_deps::xxhash)

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
endif()

# The same store used in header-only mode (no compiled library).
add_executable(cache_header_only_test ${CMAKE_CURRENT_SOURCE_DIR}/cache/header_only_test.cpp)
target_link_libraries(cache_header_only_test PRIVATE quadrants::header-only qd_doctest_main)
target_include_directories(cache_header_only_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME cache/header_only COMMAND cache_header_only_test)
