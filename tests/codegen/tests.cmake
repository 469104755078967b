qd_add_test(codegen golden)
target_compile_definitions(codegen_golden_test PRIVATE QD_GOLDEN_DIR="${CMAKE_CURRENT_SOURCE_DIR}/codegen/golden")
