# Set-up contract: `make run` and `make test` install what is missing, build, and run.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: deps configure build run test bench docs clean mutation coverage

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The first answer needs only the binary: tests, benchmarks and the Python module wait for `make build`/`make test`.
run: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target scalemodel
	@$(BUILD_DIR)/scalemodel search examples/search-gpt3-175b.json --gpus 1024 --top 10

# CTEST_ARGS: more ctest arguments (.ci/run's sanitized run leaves out the largest brute-force spaces).
CTEST_ARGS ?=
test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

bench: build
	@$(BUILD_DIR)/bench/scalemodel_bench

# docs/VALIDATION.md is generated; a test fails when it is stale. docs/studies/ holds each
# study's command and output (docs/STUDIES.md), docs/img/ the README's plot gallery, regenerated here.
docs: build
	@$(BUILD_DIR)/scalemodel validate --format markdown > docs/VALIDATION.md
	@bash scripts/preset_schema.sh $(BUILD_DIR)/scalemodel
	@python3 scripts/readme_examples.py $(BUILD_DIR)/scalemodel
	@bash scripts/studies.sh $(BUILD_DIR)/scalemodel
	@bash scripts/gallery.sh $(BUILD_DIR)/scalemodel
	@python3 scripts/compare-kernels.py data/calibration/h100-kernels.csv presets/systems/dgx-h100.json > docs/KERNELS.md
	@python3 scripts/compare-mamba.py $(BUILD_DIR)/scalemodel dgx-h100 data/calibration/h100-mamba.csv data/calibration/h100-mamba-kernels.csv dgx-h200 data/calibration/h200-mamba.csv data/calibration/h200-mamba-kernels.csv >> docs/KERNELS.md

# Mutation testing (docs/TESTING.md): MUTANTS=N|all sampled with SEED, JOBS workers, in build-mutation/.
MUTANTS ?= 250
SEED ?= 1
mutation: deps
	@python3 scripts/mutation.py --mutants $(MUTANTS) --seed $(SEED) --jobs $(JOBS)

# Line and branch coverage of src/ over the whole suite, CLI scripts included (build-coverage/).
coverage:
	@SCALEMODEL_WITH_COVERAGE=1 bash scripts/install-deps.sh
	@python3 scripts/coverage.py --jobs $(JOBS)

clean:
	rm -rf $(BUILD_DIR)
