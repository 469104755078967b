# The two commands of the README: `make demo` and `make test`.
# Each installs missing Debian packages, configures, builds what it needs, and runs.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo bench clean

all: build

deps:
	@scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target heat_diffusion
	$(BUILD_DIR)/examples/heat_diffusion

bench: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target benchmarks
	$(BUILD_DIR)/bench/cpu_bench
	$(BUILD_DIR)/bench/cache_bench
	$(BUILD_DIR)/bench/gpu_compile_bench
	$(BUILD_DIR)/bench/gpu_run_bench

clean:
	rm -rf $(BUILD_DIR)
