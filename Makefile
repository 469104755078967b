# The two commands of the README: `make demo` and `make test`.
# Each installs missing Debian packages, configures, builds what it needs, and runs.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

# Sanitizer builds and the fuzzers (docs/testing.md). make test runs `sanitize` after
# the suite: ASan+UBSan over most tests, TSan over the threaded ones, and libFuzzer on
# the cache entry reader and the remote tier's reply reader for LIBFUZZER_SECONDS each.
SANITIZE_DIR ?= build-sanitize
TSAN_DIR ?= build-tsan
LIBFUZZER_DIR ?= build-libfuzzer
LIBFUZZER_SECONDS ?= 30
FUZZ_SECONDS ?= 600
SANITIZER_FLAGS = -DQD_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
	-DQD_BUILD_EXAMPLES=OFF -DQD_BUILD_BENCH=OFF
ASAN_TESTS = ir_serialize_test ir_dce_test ir_printer_test ir_op_table_test ir_nesting_test codegen_golden_test analysis_constructs_test analysis_task_plan_test \
	analysis_split_test analysis_atomic_demotion_test analysis_graph_test runtime_vec_test runtime_autodiff_test runtime_loop_control_test runtime_return_value_test runtime_struct_param_test \
	runtime_graph_test runtime_debug_dump_test runtime_text_file_test runtime_mesh_test runtime_source_location_test runtime_explain_test runtime_coverage_test backend_thread_pool_test backend_cpu_compiler_test backend_reference_test backend_gpu_suite_test cache_key_test \
	cache_entry_test cache_records_test cache_store_test cache_remote_test cache_remote_attacks_test runtime_statements_test \
	runtime_errors_test runtime_threads_test runtime_fork_test runtime_per_offload_test kernel_worker fuzz_differential_test \
	fuzz_regressions_test
ASAN_REGEX = ^(ir|analysis|codegen)/|^backend/(thread_pool|cpu_compiler|reference|gpu_suite)$$|^cache/(key|entry|records|store|remote|remote_attacks)$$|^runtime/(statements|errors|threads|fork|per_offload|vec|autodiff|loop_control|return_value|struct_param|graph|debug_dump|text_file|mesh|source_location|explain|coverage)$$|^fuzz/(differential|regressions)$$
TSAN_TESTS = backend_thread_pool_test cache_store_test cache_store_processes_test cache_store_worker cache_remote_test cache_remote_attacks_test runtime_threads_test \
	runtime_per_offload_test runtime_graph_test kernel_worker
TSAN_REGEX = ^backend/thread_pool$$|^cache/(store|store_processes|remote|remote_attacks)$$|^runtime/(threads|per_offload|graph)$$
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

.PHONY: all deps configure build test demo bench clean sanitize asan tsan libfuzzer fuzz

all: build

deps:
	@scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DQD_WERROR=ON $(CMAKE_FLAGS) >/dev/null

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory sanitize

sanitize: asan tsan libfuzzer

asan: deps
	@cmake -S . -B $(SANITIZE_DIR) $(SANITIZER_FLAGS) -DQD_SANITIZE=address,undefined >/dev/null
	cmake --build $(SANITIZE_DIR) -j $(JOBS) --target $(ASAN_TESTS)
	$(SANITIZER_ENV) ctest --test-dir $(SANITIZE_DIR) --output-on-failure -j $(JOBS) -R '$(ASAN_REGEX)'

tsan: deps
	@cmake -S . -B $(TSAN_DIR) $(SANITIZER_FLAGS) -DQD_SANITIZE=thread >/dev/null
	cmake --build $(TSAN_DIR) -j $(JOBS) --target $(TSAN_TESTS)
	$(SANITIZER_ENV) ctest --test-dir $(TSAN_DIR) --output-on-failure -j $(JOBS) -R '$(TSAN_REGEX)'

libfuzzer: deps
	@cmake -S . -B $(LIBFUZZER_DIR) -DCMAKE_CXX_COMPILER=clang++ $(SANITIZER_FLAGS) -DQD_LIBFUZZER=ON \
		-DQD_LIBFUZZER_SECONDS=$(LIBFUZZER_SECONDS) >/dev/null
	cmake --build $(LIBFUZZER_DIR) -j $(JOBS) --target cache_entry_fuzzer remote_reply_fuzzer
	ctest --test-dir $(LIBFUZZER_DIR) --output-on-failure -R '^fuzz/(cache_entry|remote_reply)_'

# An open-ended differential campaign (FUZZ_SECONDS; 0: until interrupted): figures as it
# goes; shrunk findings in $(BUILD_DIR)/fuzz-findings, to review and add to tests/fuzz/regressions.
fuzz: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target qd_fuzz
	$(BUILD_DIR)/tests/qd_fuzz --seconds $(FUZZ_SECONDS) --save $(BUILD_DIR)/fuzz-findings

demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target heat_diffusion
	$(BUILD_DIR)/examples/heat_diffusion

bench: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target benchmarks
	$(BUILD_DIR)/bench/cpu_bench
	$(BUILD_DIR)/bench/vec_bench
	$(BUILD_DIR)/bench/cache_bench
	$(BUILD_DIR)/bench/gpu_compile_bench
	$(BUILD_DIR)/bench/gpu_run_bench
	BUILD_DIR=$(BUILD_DIR) scripts/with-emulated-gpu $(BUILD_DIR)/bench/emulated_gpu_bench

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR) $(TSAN_DIR) $(LIBFUZZER_DIR)
