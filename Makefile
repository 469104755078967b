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
LIBFUZZER_SECONDS ?= 10
FUZZ_SECONDS ?= 600
# Each sanitizer tree builds the target qd_selected_tests: the programs of exactly the tests
# its regex selects (tests/CMakeLists.txt, QD_SELECTED_TESTS), so the two cannot drift apart.
# The sanitizer trees build with clang: about 30 % less compile time than GCC for the same
# instrumented code (docs/testing.md, "The time make test takes").
SANITIZER_FLAGS = -DCMAKE_CXX_COMPILER=clang++ -DQD_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DQD_BUILD_EXAMPLES=OFF -DQD_BUILD_BENCH=OFF
# The library's flags in each tree (the test programs build at -O0 in every tree). TSan's
# library at -O0 compiles in 52 CPU s instead of 86, and its 9 tests took 25.9 CPU s against
# 27.3. ASan keeps -O1: at -O0 its stack frames are so large that the code generator's
# recursion over the deepest nesting the language documents (runtime/errors) overflows an
# 8 MiB stack. -g1: line numbers in the reports. libFuzzer wants executions per second: -O1.
ASAN_CXXFLAGS ?= -O1 -g1
# ... but only the code generator's part of the library (src/quadrants.cpp) needs it: the other
# three build at -O0 (QD_O0_PARTS), 76 CPU s less, their tests as before (docs/testing.md).
ASAN_O0_PARTS ?= backend;runtime;cache
TSAN_CXXFLAGS ?= -O0 -g1
LIBFUZZER_CXXFLAGS ?= -O1 -g1
# ASAN_ONLY_REGEX: the ASan tests that run nowhere else in make test (SANITIZER_ONLY below);
# ir/* and analysis/* also run in the main tree, where GCC checks their compile-time
# assertions (tests/support/constexpr_check.hpp: clang 14 cannot evaluate them). codegen/golden
# runs in the main tree only: its golden IR is GCC's (the order of traced operands follows the
# compiler's order of evaluating a call's arguments, which C++ leaves unspecified).
# fuzz/differential runs whole in the main tree and as a sample under ASan (QD_FUZZ_SAMPLE,
# tests/fuzz/tests.cmake): its CPU batches pay for the host compiler, which is not instrumented.
ASAN_REGEX = ^(ir|analysis)/|^fuzz/differential$$|$(ASAN_ONLY_REGEX)
ASAN_ONLY_REGEX = ^backend/(thread_pool|cpu_compiler|reference)$$|^cache/(key|entry|records|store|remote|remote_attacks)$$|^runtime/(statements|errors|threads|fork|per_offload|vec|autodiff|loop_control|return_value|struct_param|graph|debug_dump|text_file|mesh|source_location|explain|coverage)$$|^fuzz/regressions$$
TSAN_REGEX = ^backend/thread_pool$$|^cache/(store|store_processes|remote|remote_attacks)$$|^runtime/(threads|per_offload|graph|scatter|compile_all)$$
LIBFUZZER_REGEX = ^fuzz/(cache_entry|remote_reply)_
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

.PHONY: all deps configure build test ctest demo bench clean sanitize asan asan-build tsan tsan-build libfuzzer \
	libfuzzer-build fuzz

all: build

deps:
	@scripts/install-deps

# The ASan-selected tests but ir/* and analysis/* run in the ASan tree only (make asan, part
# of make test): the main tree disables them and does not build their programs. `make SANITIZER_ONLY= build ctest`
# builds and runs them here too.
SANITIZER_ONLY ?= $(ASAN_ONLY_REGEX)

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DQD_WERROR=ON '-DQD_SANITIZER_ONLY_TESTS=$(SANITIZER_ONLY)' \
		$(CMAKE_FLAGS) >/dev/null

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# make test's phases, each a target (scripts/test-phases times them one by one): deps,
# configure, build, ctest, then asan-build, asan, tsan-build, tsan, libfuzzer-build, libfuzzer.
test: build
	@$(MAKE) --no-print-directory ctest
	@$(MAKE) --no-print-directory sanitize

# The suite on what is built (no build step).
ctest:
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

sanitize: asan tsan libfuzzer

asan: asan-build
	$(SANITIZER_ENV) ctest --test-dir $(SANITIZE_DIR) --output-on-failure -j $(JOBS) -R '$(ASAN_REGEX)'

asan-build: deps
	@cmake -S . -B $(SANITIZE_DIR) $(SANITIZER_FLAGS) '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(ASAN_CXXFLAGS)' -DQD_SANITIZE=address,undefined '-DQD_O0_PARTS=$(ASAN_O0_PARTS)' '-DQD_SELECTED_TESTS=$(ASAN_REGEX)' >/dev/null
	cmake --build $(SANITIZE_DIR) -j $(JOBS) --target qd_selected_tests

tsan: tsan-build
	$(SANITIZER_ENV) ctest --test-dir $(TSAN_DIR) --output-on-failure -j $(JOBS) -R '$(TSAN_REGEX)'

tsan-build: deps
	@cmake -S . -B $(TSAN_DIR) $(SANITIZER_FLAGS) '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(TSAN_CXXFLAGS)' -DQD_SANITIZE=thread '-DQD_SELECTED_TESTS=$(TSAN_REGEX)' >/dev/null
	cmake --build $(TSAN_DIR) -j $(JOBS) --target qd_selected_tests

libfuzzer: libfuzzer-build
	ctest --test-dir $(LIBFUZZER_DIR) --output-on-failure -j $(JOBS) -R '$(LIBFUZZER_REGEX)'

libfuzzer-build: deps
	@cmake -S . -B $(LIBFUZZER_DIR) $(SANITIZER_FLAGS) '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(LIBFUZZER_CXXFLAGS)' \
		-DQD_LIBFUZZER=ON \
		-DQD_LIBFUZZER_SECONDS=$(LIBFUZZER_SECONDS) '-DQD_SELECTED_TESTS=$(LIBFUZZER_REGEX)' >/dev/null
	cmake --build $(LIBFUZZER_DIR) -j $(JOBS) --target qd_selected_tests

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
	$(BUILD_DIR)/bench/gpu_sass_bench
	BUILD_DIR=$(BUILD_DIR) scripts/with-emulated-gpu $(BUILD_DIR)/bench/emulated_gpu_bench

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR) $(TSAN_DIR) $(LIBFUZZER_DIR)
