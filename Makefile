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

# The main job on shipped data: train on the EUR/USD bars (the GPU when there is one, else
# the CPU; a few minutes on 2 cores) into a new runs/YYYYmmdd-HHMMSS-eurusd folder, which
# the last line names.
run: build
	./$(BUILD)/vulpes train examples/eurusd.yaml

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(BUILD).configure.log
