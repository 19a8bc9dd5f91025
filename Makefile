# Build glue. Everything a user runs is the C program built by CMake;
# this file only installs what is missing, builds, and runs the suites.
#
#   make report   set up, build, install the kernelspec, build the lab report
#   make lab      set up (the kernelspec in .venv, with JupyterLab and jupyterlab-myst)
#                 and start JupyterLab on notebooks/ (LAB_ARGS=... passes options)
#   make test     set up, build, run every test (also under ASan + UBSan), replay
#                 the fuzz corpora and fuzz each target for 30 s
#   make fuzz     fuzz each target for FUZZ_SECONDS (default 600), two at a time
#   make bench    build and run the quick benchmarks (docs/performance.md)
#   make gpu-check OUT=DIR   on a machine with an NVIDIA GPU: build with CUDA, run the GPU
#                 tests (also under compute-sanitizer) and benchmarks, results into DIR
#   make gpu-first OUT=DIR   on a machine with an NVIDIA GPU: the first command there, within
#                 540 s: the models on both devices, then the figures (docs/gpu.md)
#   make gpu-deps download the Debian packages gpu-check needs where they are missing
#                 (docs/gpu.md)
#   make deb      the Debian package for a class's machines, $(DEB_BUILD)/syslab_VERSION_amd64.deb
#                 (docs/package.md)

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
DEB_BUILD  ?= build-deb
FUZZ_SECONDS ?= 600
FUZZ_TARGETS := parse eval csv idx wire notebook markdown journal checkpoint inline
VENV       ?= .venv
JOBS       ?= $(shell nproc)
PYTHON     ?= python3
SYSLAB     := $(BUILD)/syslab

# Debian packages needed to build, run and test syslab (and to package it:
# CPack finds the programs to give dpkg-shlibdeps with `file`).
APT_PACKAGES := build-essential cmake pkg-config libzmq3-dev libjansson-dev libssl-dev \
  libopenblas-dev zlib1g-dev gnuplot-nox dataset-fashion-mnist chromium poppler-utils \
  fonts-dejavu-core python3-venv valgrind libcmark-gfm-dev libcmark-gfm-extensions-dev libjs-katex graphviz \
  openmpi-bin libopenmpi-dev clang libclang-rt-dev file clang-format

.PHONY: all deps build asan fuzz-build fuzz test-fuzz venv kernelspec test test-unit test-python test-asan report lab bench gpu-check gpu-first gpu-deps deb clean

all: build

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	cmake -S . -B $(BUILD) -DSYSLAB_WERROR=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

asan: deps
	cmake -S . -B $(ASAN_BUILD) -DSYSLAB_WERROR=ON -DSYSLAB_SANITIZE=ON -DSYSLAB_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)

$(VENV)/.stamp: tests/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r tests/requirements.txt
	touch $@

venv: deps $(VENV)/.stamp

# The kernelspec goes into the virtual environment, where the test clients look.
kernelspec: build venv
	$(SYSLAB) install --prefix $(VENV)

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-python: kernelspec
	SYSLAB_BIN=$(abspath $(SYSLAB)) PATH=$(abspath $(VENV))/bin:$$PATH \
	  $(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/python

# The unit tests, then the kernel's client suites against the sanitized
# binary (its kernelspec goes first on JUPYTER_PATH); any report the kernel
# writes to asan-log.* fails the run.
SANITIZER_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-asan: asan venv
	cd $(ASAN_BUILD) && $(SANITIZER_ENV) ctest --output-on-failure -j $(JOBS)
	rm -rf $(ASAN_BUILD)/jupyter $(ASAN_BUILD)/asan-log.*
	$(ASAN_BUILD)/syslab install --prefix $(ASAN_BUILD)/jupyter
	JUPYTER_PATH=$(abspath $(ASAN_BUILD))/jupyter/share/jupyter SYSLAB_BIN=$(abspath $(ASAN_BUILD))/syslab \
	  ASAN_OPTIONS=detect_leaks=1:log_path=$(abspath $(ASAN_BUILD))/asan-log UBSAN_OPTIONS=print_stacktrace=1:log_path=$(abspath $(ASAN_BUILD))/asan-log \
	  $(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/python/test_kernel_conformance.py \
	    tests/python/test_kernel_client.py tests/python/test_cli.py
	@if ls $(ASAN_BUILD)/asan-log.* >/dev/null 2>&1; then cat $(ASAN_BUILD)/asan-log.*; \
	  echo "sanitizer reports above"; exit 1; fi

# libFuzzer targets (tests/fuzz), built by clang with ASan and UBSan
fuzz-build: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DSYSLAB_FUZZ=ON -DSYSLAB_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))

fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

test-fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_BUILD) 30 $(FUZZ_TARGETS)

test: test-unit test-python test-asan test-fuzz

# The main job: every notebook in notebooks/ executed into the lab report.
report: build
	$(SYSLAB) install --user
	$(SYSLAB) report

# The lab notebooks in JupyterLab as students use them: the test
# environment (.venv) has JupyterLab and jupyterlab-myst, which shows the
# notebooks' {eval} values live, and the kernelspec is installed there.
LAB_ARGS ?=
lab: kernelspec
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks $(LAB_ARGS)

# The quick benchmarks: each bench/ program at a small size, kernel start-up
# and the sampler overhead against Optuna, about 75 s on two cores once built
# (docs/performance.md: what they measure, the full-size commands, the
# recorded figures). BENCH_VENV=.bench-venv (bench/venv.sh) adds PyTorch
# beside the engine's training speed.
bench: kernelspec
	$(BUILD)/bench_kernels gemm 512
	$(BUILD)/bench_kernels attention 512 1024
	$(BUILD)/bench_kernels mxint8 16
	$(BUILD)/bench_quant 16
	$(BUILD)/bench_qat 2000 2
	$(BUILD)/bench_speed 1
	$(BUILD)/bench_scale $(BUILD)
	$(BUILD)/bench_plot 10
	$(VENV)/bin/python bench/kernel_bench.py --starts 5 --executes 100
	$(VENV)/bin/python bench/search_bench.py --runs 1 --trials 100

# The GPU side (docs/gpu.md). gpu-check needs no apt: on the CUDA machine the
# libraries come from the system or from .gpu-deps/, which gpu-deps fills here.
GPU_OUT ?= $(if $(OUT),$(OUT),out/gpu-check)
gpu-check:
	sh bench/gpu_check.sh $(GPU_OUT)

# the first command on a GPU machine: its budget (GPU_FIRST_SECONDS, 540) and
# steps (GPU_FIRST_STEPS) are variables of bench/gpu_first.sh
gpu-first:
	sh bench/gpu_first.sh $(if $(OUT),$(OUT),out/gpu-first)

gpu-deps: build
	sh bench/gpu_deps.sh

# The Debian package (docs/package.md): a release build of the program and
# the MPI and CUDA modules (where MPI and nvcc are found) that knows no path
# of this tree (SYSLAB_BUILD_TREE_PATHS=OFF), installed under /usr and packed
# by CPack; only the program and the modules it depends on are built
# (CMAKE_SKIP_INSTALL_ALL_DEPENDENCY keeps CPack from building the tests).
deb: deps
	cmake -S . -B $(DEB_BUILD) -DCMAKE_BUILD_TYPE=Release -DSYSLAB_BUILD_TREE_PATHS=OFF -DSYSLAB_WERROR=ON \
	  -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null
	cmake --build $(DEB_BUILD) -j $(JOBS) --target syslab
	cd $(DEB_BUILD) && cpack -G DEB >/dev/null
	@ls $(DEB_BUILD)/syslab_*.deb

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(DEB_BUILD)
