# Two set-up commands for a fresh machine (see README): `make run` and `make test`.
# Both create .venv and install what they need; later runs reuse it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= 2
# Generated projects built here (run, test, bench-*) compile the kernels once per source,
# flags and compiler (rip.firmware.object_cache), not once per project.
export CC_LAUNCHER ?= $(abspath $(BIN))/python -m rip.firmware.object_cache
export RIP_OBJECT_CACHE ?= $(abspath build/object-cache)

.PHONY: run test test-fast lint typecheck fuzz bench bench-quick bench-sweep bench-alloc bench-host bench-compile bench-cost bench-cores bench-cmsis profile-functions calibrate-cost clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# The main job on the host (no hardware): plan the bundled example model's memory, generate
# its C, build and run it, and compare the output checksum with TFLite Micro's.
run: $(STAMP)
	$(BIN)/rip-compile examples/example-cnn.tflite --board host --report -o build/example --run

# Every test, after the lint and the type check. pytest exits 5 when it collects nothing:
# say so, and fail (a suite that runs no test has verified nothing).
PYTEST = $(BIN)/python -m pytest -n $(JOBS) $(1); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make $@: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc
test: lint
	$(call PYTEST,)

# The edit loop's tier: the same lint and type check, then the tests not marked slow
# (tests/conftest.py marks QEMU runs, Pico SDK builds and whole shared-model compiles).
test-fast: lint
	$(call PYTEST,-m "not slow")

# Longer fuzzing than CI's bounded run (tests/test_fuzz.py): the model reader, validator and
# planner, rip-bounds' fields, and (issue 22) board files, result lines, UF2 and ELF files,
# expected.json fields and -o manifests; random examples, FUZZ_EXAMPLES per target. A crash
# found is fixed and kept in the corpus (tests/make_bad_models.py, tests/make_bad_inputs.py).
FUZZ_EXAMPLES ?= 5000
fuzz: $(STAMP)
	RIP_FUZZ_PROFILE=fuzz RIP_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -p no:xdist -x tests/test_fuzz.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(MAKE) --no-print-directory typecheck

# mypy over the package ([tool.mypy] in pyproject.toml). The repository root is the
# package `rip` and no checkout path names it, so mypy finds it through a link,
# build/typecheck/rip -> the root.
typecheck: $(STAMP)
	@mkdir -p build/typecheck && ln -sfn ../.. build/typecheck/rip
	$(BIN)/mypy

# The 10,000-layer sweep of Sec. 5.2 with its wall time (target: under 5 minutes here), then
# 3,000 random fused chains (issue 12): chain gap and ring rows against the fused simulator.
bench-sweep: $(STAMP)
	/usr/bin/time -f 'wall %e s' $(BIN)/rip-sweep --layers 10000 --chains 3000 --seed 0 --jobs $(JOBS) --csv build/sweep.csv

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .hypothesis

# MILP cost per keras graph: our formulation and the paper's all-pairs one, side by side.
bench-alloc: $(STAMP)
	$(BIN)/python benchmarks/bench_alloc.py $(BENCH_ARGS)

# Inference time of the generated host C against the TFLite Micro interpreter, as a ratio.
bench-host: $(STAMP)
	$(BIN)/python benchmarks/bench_host.py $(BENCH_ARGS)

# Compile time per model and stage, end to end against the previous release (issue 13).
bench-compile: $(STAMP)
	$(BIN)/python benchmarks/bench_compile.py $(BENCH_ARGS)
# Executed instructions per inference on the emulated boards (QEMU), every shared model with
# weights, dual / tinyengine / rip, against TFLite Micro + CMSIS-NN on the same core; then
# the MCUNet models timed as the Pico 1 / Pico 2 (rip.timing, docs/pico-timing.md), rip and
# (with CMSIS_NN_DIR and CMSIS_CORE_DIR set, as for bench-cmsis) CMSIS-NN's kernels; with
# them also an attention block and a 16x8 DS-CNN (benchmarks/writer_models.py) against the
# CMSIS-NN routines TFLite Micro calls for them (BENCH_ARGS=--only-writer-models: that alone).
bench-cost: $(STAMP)
	$(BIN)/python benchmarks/bench_cost.py --jobs $(JOBS) $(BENCH_ARGS)

# Two cores against one (issue 27): rip on --cores 1 and --cores 2, arena and instructions
# (the critical path on QEMU's dual-core mps2-an521) side by side; also a section of bench-cost.
bench-cores: $(STAMP)
	$(BIN)/python benchmarks/two_cores.py --jobs $(JOBS) $(BENCH_ARGS)

# The fused strategy's instruction cost model (--max-overhead's estimates): per-op
# instructions of the MCUNet models under rip and fused on qemu-m33 and qemu-armv6m, fitted
# by least squares into allocator/planning/cost_model.json. Rerun (and commit the file)
# whenever a kernel's speed changes.
calibrate-cost: $(STAMP)
	$(BIN)/python benchmarks/calibrate_cost.py --jobs $(JOBS) $(BENCH_ARGS)

# Per op class, rip's kernels against CMSIS-NN's own (called as TFLite Micro's cmsis_nn
# kernels call them) on QEMU, every layer's output checked against TFLite Micro. Needs
# CMSIS-NN and CMSIS_6 checkouts (never committed): CMSIS_NN_DIR=... CMSIS_CORE_DIR=...
# or BENCH_ARGS='--cmsis-nn DIR --cmsis-core DIR'; add --boards qemu-m33,qemu-armv6m.
bench-cmsis: $(STAMP)
	$(BIN)/python benchmarks/bench_cmsis.py --jobs $(JOBS) $(BENCH_ARGS)

# Where one inference's instructions go, by function (the timing plugin's per-address
# profile): make profile-functions MODEL=../shared/models/mcunet/mcunet-in1.tflite BOARD=qemu-armv6m
# (BENCH_ARGS="--annotate rip_dw_plane_cols": also that function's instructions, each with its
# executions)
profile-functions: $(STAMP)
	$(BIN)/python benchmarks/profile_functions.py $(MODEL) --board $(or $(BOARD),qemu-armv6m) $(BENCH_ARGS)

# docs/RESULTS.md, docs/results.json and docs/figures/*.png regenerated from one run of the
# benchmarks above (target: under 45 minutes here), and the README's headline block.
# bench-quick: the MCUNet models only, no keras graphs (target: under 5 minutes).
bench: $(STAMP)
	$(BIN)/python benchmarks/make_results.py --jobs $(JOBS)

bench-quick: $(STAMP)
	$(BIN)/python benchmarks/make_results.py --quick --jobs $(JOBS)
