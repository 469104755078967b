# Runtime layer: the DSL's statements and expressions run on the CPU backend and
# checked against plain C++, values crossing constructs, and run-time errors.
qd_add_test(runtime statements)
qd_add_test(runtime errors)
qd_add_test(runtime threads)  # several host threads at once; also run under ThreadSanitizer
qd_add_test(runtime fork)     # a child of fork() launching kernels (not under ThreadSanitizer)
qd_add_test(runtime config)   # where a bad setting came from; qd::init_best_available
qd_add_test(runtime loop_control)  # qd::loop_config, qd::break_, qd::continue_ (SPEC §11.4)
qd_add_test(runtime return_value)  # kernels returning values (SPEC §11.3)
qd_add_test(runtime struct_param)  # struct parameters (SPEC §11.2)
qd_add_test(runtime hot_path)      # warm launches allocate nothing (global operator new counted)
qd_add_test(runtime compile_all)   # qd::compile_all and the progress of a long cold start
qd_add_test(runtime scatter)       # plain updates on one thread, the scatter gate (also under TSan)

# Per-offload caching and the offline cache from the user's side; both run
# kernel_worker in separate processes sharing a cache directory.
add_executable(kernel_worker ${CMAKE_CURRENT_LIST_DIR}/kernel_worker.cpp)
target_link_libraries(kernel_worker PRIVATE quadrants::quadrants)
qd_add_test(runtime spec_api)
foreach(name per_offload offline_cache)
  qd_add_test(runtime ${name})
  target_compile_definitions(runtime_${name}_test PRIVATE QD_KERNEL_WORKER="$<TARGET_FILE:kernel_worker>")
  add_dependencies(runtime_${name}_test kernel_worker)
endforeach()
set_tests_properties(runtime/offline_cache PROPERTIES TIMEOUT 600)

# The remote cache tier (issue 17): remote_worker processes on a redis-server the test starts.
add_executable(remote_worker ${CMAKE_CURRENT_LIST_DIR}/remote_worker.cpp)
target_link_libraries(remote_worker PRIVATE quadrants::quadrants)
qd_add_test(runtime remote_cache)
target_compile_definitions(runtime_remote_cache_test PRIVATE QD_KERNEL_WORKER="$<TARGET_FILE:remote_worker>")
add_dependencies(runtime_remote_cache_test remote_worker)
set_tests_properties(runtime/remote_cache PROPERTIES TIMEOUT 300)
qd_add_test(runtime vec)  # qd::vec / qd::mat (SPEC §11.1) on the CPU and reference backends
# Per-thread linear algebra (SPEC §13.7) against Eigen (libeigen3-dev).
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
qd_add_test(runtime linalg LIBS Eigen3::Eigen)
# Deterministic reductions (SPEC §14.3): bits across CPU thread counts, the reference, GPUs.
qd_add_test(runtime reductions)

# Reverse-mode autodiff (issue 12): kernel.grad and qd::ad::tape on the CPU and the reference.
qd_add_test(runtime autodiff)

# Graph kernels and concurrent regions (issue 13, SPEC §11.6).
qd_add_test(runtime graph)
target_compile_definitions(runtime_graph_test PRIVATE QD_KERNEL_WORKER="$<TARGET_FILE:kernel_worker>")
add_dependencies(runtime_graph_test kernel_worker)

# Diagnostics (issue 14, SPEC §11.8): debug dumps.
qd_add_test(runtime debug_dump)
qd_add_test(runtime text_file)  # the dump and coverage writer: planted links, FIFOs, devices, open directories
qd_add_test(runtime source_location)
qd_add_test(runtime explain)
if(TARGET qd-cache)  # qd-cache explain reads what the runtime stored
  add_dependencies(runtime_explain_test qd-cache)
  target_compile_definitions(runtime_explain_test PRIVATE QD_CACHE_TOOL="$<TARGET_FILE:qd-cache>")
endif()
qd_add_test(runtime coverage)
target_compile_definitions(runtime_coverage_test PRIVATE QD_COMPILE_DIR="${CMAKE_CURRENT_BINARY_DIR}")
qd_add_test(runtime mesh)  # qd::mesh, qd::mesh_for, qd::for_each (SPEC §11.7, issue 14)
qd_add_test(runtime expressions)  # short-circuit &&/||, literal types, qd::assert_, draw order (SPEC §13.4)
qd_add_test(runtime struct_array)  # arrays of structs, AoS and SoA; external arrays of vectors (SPEC §13.6)
qd_add_test(runtime template_arg)  # kernels specialised per value (SPEC §13.5)

# One kernel source built by g++ and by clang++ draws the same random numbers: the
# kernel file is compiled a second time by clang++ into a namespace of its own.
find_program(QD_CLANGXX NAMES clang++ clang++-16 clang++-15 clang++-14)
if(QD_CLANGXX AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(qd_draw_order_src ${CMAKE_CURRENT_LIST_DIR}/draw_order_kernel.cpp)
  set(qd_draw_order_obj ${CMAKE_CURRENT_BINARY_DIR}/draw_order_kernel_clang.o)
  get_target_property(qd_draw_order_boost Boost::headers INTERFACE_INCLUDE_DIRECTORIES)
  add_custom_command(OUTPUT ${qd_draw_order_obj}
                     COMMAND ${QD_CLANGXX} -std=c++20 -O1 -fPIC -DQD_SEPARATE_COMPILATION
                             -DQD_DRAW_ORDER_NAMESPACE=by_clang -I${PROJECT_SOURCE_DIR}/include
                             "-I$<JOIN:${qd_draw_order_boost},;-I>" -c ${qd_draw_order_src} -o ${qd_draw_order_obj}
                     DEPENDS ${qd_draw_order_src} IMPLICIT_DEPENDS CXX ${qd_draw_order_src} COMMAND_EXPAND_LISTS
                     COMMENT "Compiling draw_order_kernel.cpp with clang++")
  qd_add_test(runtime draw_order)
  target_sources(runtime_draw_order_test PRIVATE ${qd_draw_order_src} ${qd_draw_order_obj})
  set_source_files_properties(${qd_draw_order_src} PROPERTIES COMPILE_DEFINITIONS QD_DRAW_ORDER_NAMESPACE=by_gcc)
endif()

# No silent wrong gradient (issue 27): the accumulation rules, in a kernel and on a tape.
qd_add_test(runtime gradient_rules)
qd_add_test(runtime gradient_api)  # qd::ad::gradcheck, the tape's clear_gradients (SPEC §13.9)
