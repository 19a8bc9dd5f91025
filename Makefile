# Build glue. Everything a user runs is the C program built by CMake;
# this file only installs what is missing, builds, and runs the suites.
#
#   make report   set up, build, install the kernelspec, build the lab report
#   make test     set up, build, run every test (also under ASan + UBSan)

BUILD      ?= build
ASAN_BUILD ?= build-asan
VENV       ?= .venv
JOBS       ?= $(shell nproc)
PYTHON     ?= python3
SYSLAB     := $(BUILD)/syslab

# Debian packages needed to build, run and test syslab.
APT_PACKAGES := build-essential cmake pkg-config libzmq3-dev libjansson-dev libssl-dev \
  libopenblas-dev zlib1g-dev gnuplot-nox dataset-fashion-mnist chromium poppler-utils \
  fonts-dejavu-core python3-venv valgrind

.PHONY: all deps build asan venv kernelspec test test-unit test-python test-asan report bench clean

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

test-asan: asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

test: test-unit test-python test-asan

report: build
	$(SYSLAB) install --user
	$(SYSLAB) report

bench: build venv
	@echo "see docs/performance.md for the benchmark commands"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
