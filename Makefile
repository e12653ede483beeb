# Convenience front end over CMake. `make run` and `make test` are the README quickstart.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Warnings are errors in CI (CI=true) and when asked (WERROR=ON).
ifeq ($(CI),true)
WERROR ?= ON
endif
WERROR ?= OFF

.PHONY: setup setup-python configure build run test test-sanitize fuzz clean

setup:
	@bash scripts/setup.sh

# The Python packages of the Python tests (python/requirements.txt, into .pyvenv): `make test` only.
setup-python:
	@bash scripts/setup.sh --python

configure: setup
	@cmake -S . -B $(BUILD) -DVP_WERROR=$(WERROR) > $(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)
	@grep -E "vulpes:" $(BUILD).configure.log || true

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main job on shipped data: train on the EUR/USD bars (the GPU when there is one, else
# the CPU; about a minute and a half on 2 cores) into a new runs/YYYYmmdd-HHMMSS-eurusd folder, which
# the last line names.
run: build
	./$(BUILD)/vulpes train examples/eurusd.yaml

test: build setup-python
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The CPU test suite under AddressSanitizer + UBSan (gcc's runtimes; UB stops a test). CI
# runs it after `make test`. test_train_learn is left out: ~10 s normally, several minutes
# under the sanitizers on CI's 2 cores, and its code paths run in the other tests too.
ASAN_BUILD ?= build-asan
SANITIZE_EXCLUDE ?= ^test_train_learn$$
test-sanitize: setup
	@cmake -S . -B $(ASAN_BUILD) -DVP_CUDA=OFF -DVP_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DVP_SANITIZE=address,undefined > $(ASAN_BUILD).configure.log 2>&1 || (cat $(ASAN_BUILD).configure.log; exit 1)
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -E '$(SANITIZE_EXCLUDE)'

# libFuzzer targets (docs/fuzz.md): builds fuzz/fuzz_*.c with clang (ASan + UBSan, CPU only)
# and runs each for FUZZ_SECONDS on a scratch copy of fuzz/corpus/NAME/; fails when one
# finds a crash, leak, UB or timeout (the input is kept in $(FUZZ_BUILD)/artifacts/NAME/).
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 25
fuzz:
	@bash scripts/setup.sh --fuzz
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DVP_FUZZ=ON -DVP_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  > $(FUZZ_BUILD).configure.log 2>&1 || (cat $(FUZZ_BUILD).configure.log; exit 1)
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@failed=""; root=$$(pwd); \
	for src in fuzz/fuzz_*.c; do \
	  [ -f "$$src" ] || continue; name=$${src#fuzz/fuzz_}; name=$${name%.c}; t=$(FUZZ_BUILD)/fuzz/fuzz_$$name; \
	  scratch=$$(mktemp -d); art="$$root/$(FUZZ_BUILD)/artifacts/$$name"; log="$$root/$(FUZZ_BUILD)/fuzz_$$name.log"; \
	  mkdir -p "$$scratch/corpus" "$$art"; \
	  if [ -d "fuzz/corpus/$$name" ]; then cp -R "fuzz/corpus/$$name/." "$$scratch/corpus/"; fi; \
	  echo "fuzz: $$name for $(FUZZ_SECONDS) s on $$(ls "$$scratch/corpus" | wc -l) inputs (log $$log)"; \
	  if (cd "$$scratch" && TMPDIR="$$scratch" "$$root/$$t" -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) \
	        -print_final_stats=1 -artifact_prefix="$$art/" corpus > "$$log" 2>&1); then \
	    echo "fuzz: $$name clean: $$(grep -E '^stat::number_of_executed_units' "$$log" | sed 's/.*: *//') runs"; \
	  else \
	    tail -n 40 "$$log"; echo "fuzz: $$name FAILED (inputs in $$art)"; failed="$$failed $$name"; \
	  fi; \
	  rm -rf "$$scratch"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: crashes in:$$failed"; exit 1; fi

clean:
	rm -rf $(BUILD) $(BUILD).configure.log
