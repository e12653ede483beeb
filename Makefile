# Convenience front end over CMake. `make run` and `make test` are the README quickstart.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Warnings are errors in CI (CI=true) and when asked (WERROR=ON).
ifeq ($(CI),true)
WERROR ?= ON
endif
WERROR ?= OFF

.PHONY: setup configure build run test clean

setup:
	@bash scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -DVP_WERROR=$(WERROR) > $(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)
	@grep -E "vulpes:" $(BUILD).configure.log || true

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main job on shipped data.
run: build
	./$(BUILD)/vulpes bench gemm --backend auto --quick

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(BUILD).configure.log
