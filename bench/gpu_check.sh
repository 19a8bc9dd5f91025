#!/bin/sh
# gpu_check.sh - build with CUDA, test and benchmark everything CUDA, into one folder.
#
#   make gpu-check OUT=DIR      (or: sh bench/gpu_check.sh DIR)
#
# On a machine with an NVIDIA GPU and the CUDA toolkit (nvcc, CMake). The
# project's Debian libraries (ZeroMQ, jansson, OpenBLAS, cmark-gfm,
# gnuplot and what they need) are taken from the system when it has them;
# on a machine without them, `make gpu-deps` run on a Debian 12 machine
# first downloads them into .gpu-deps/, and this script unpacks them into
# a prefix inside the build folder (docs/gpu.md). What DIR receives, at
# most eight files:
#   summary.md   the machine, the tests' verdicts, every figure and ratio (bench/gpu_summary.py)
#   machine.txt  GPU, driver, CUDA, clocks, compiler, PyTorch
#   build.log    configure and build
#   tests.log    the kernel tests (CPU and GPU versions) and the operator tests (each
#                graph operator on the GPU against the CPU's), then the GPU tests
#                under compute-sanitizer memcheck and racecheck (smaller shapes)
#   bench.log    bench/gpu.sl's tables and PyTorch's rows, then bench/gpu_models.sl's, then the
#                language models' tables (step lm: bench/gpu_lm.sl and bench/torch_lm_gpu.py), as printed
#   bench.tar.gz the tables as CSV (syslab's and PyTorch's)
#   lab4.tar.gz  `syslab report notebooks/lab4.ipynb` run here (report.md, figures, notebook)
#   systems.tar.gz  the same of notebooks/systems.ipynb (step systems), its GPU section filled
# The exit status is 0 only if the build and every test passed.
#
# GPU_CHECK_STEPS chooses the steps after the build and their order
# (default: "tests sanitizer bench lab4"; "lm", the CS336 language-model
# tables from small to 2.7B beside PyTorch eager and compiled, and
# "systems", the systems notebook's report, are asked for by name, as they
# take minutes), so that the check can be
# split over calls shorter than the whole or put what matters most first;
# SANITIZER_SECONDS bounds each compute-sanitizer run (default 300) and
# STEP_SECONDS every other program a step runs (default 900).
set -u
steps=" ${GPU_CHECK_STEPS:-tests sanitizer bench lab4} "
out=${1:?usage: gpu_check.sh OUT}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GPU_BUILD:-$root/build-gpu}
mkdir -p "$out" "$build" || exit 1
out=$(cd "$out" && pwd)
status=0
note() { echo "== $*" | tee -a "$out/summary.head"; }
: >"$out/summary.head"

. "$root/bench/gpu_env.sh"
gpu_machine >"$out/machine.txt"
gpu_deps

# --- build: CUDA for Hopper (sm_90) and Ampere (sm_80): every program and the CUDA module, no MPI module
if gpu_build "${CUDA_ARCHS:-80;90}"; then
  note "build: passed"
else
  note "build: FAILED (build.log)"
  tail -n 30 "$out/build.log"
  exit 1
fi
syslab=$build/syslab
"$syslab" --version >>"$out/machine.txt" 2>&1
# the GPU as syslab finds it through its CUDA module (syslab_cuda.so in the build folder), or why it finds none
note "syslab's GPU (its CUDA module): $(echo 'print (version).gpu' | "$syslab" run - 2>&1)"

# --- the steps, in the order GPU_CHECK_STEPS names them; each is bounded
# by STEP_SECONDS (default 900) and the summary is rewritten after each, so
# that a run cut short still brings back what it finished
gpu_tests="test_kernels test_gpu_ops test_gpu_graph"
csv=$build/bench-csv
: >"$out/tests.log"
: >"$out/bench.log"
rm -rf "$csv" && mkdir -p "$csv"
bounded() { timeout "${STEP_SECONDS:-900}" "$@"; }
step_tests() {
  for t in $gpu_tests; do
    if bounded "$build/$t" >>"$out/tests.log" 2>&1; then note "$t: passed"; else note "$t: FAILED (tests.log)"; status=1; fi
  done
}
sanitize() { SYSLAB_GPU_TEST_SMALL=1 timeout "${SANITIZER_SECONDS:-300}" compute-sanitizer --tool "$1" --error-exitcode 3 "$build/$2" ${3:+"$3"}; }
step_sanitizer() {
  command -v compute-sanitizer >/dev/null 2>&1 || { note "compute-sanitizer: not installed, not run"; return; }
  for tool in memcheck racecheck; do
    # test_kernels's GPU tests alone (its argument gpu); every test of test_gpu_ops
    if sanitize "$tool" test_kernels gpu >>"$out/tests.log" 2>&1 && sanitize "$tool" test_gpu_ops >>"$out/tests.log" 2>&1; then
      note "compute-sanitizer $tool on the GPU tests: clean"
    else
      note "compute-sanitizer $tool on the GPU tests: FAILED or past ${SANITIZER_SECONDS:-300} s (tests.log)"; status=1
    fi
  done
  # models trained on the device: memcheck (their kernels are test_gpu_ops's, which racecheck covers)
  if sanitize memcheck test_gpu_graph >>"$out/tests.log" 2>&1; then note "compute-sanitizer memcheck on test_gpu_graph: clean"
  else note "compute-sanitizer memcheck on test_gpu_graph: FAILED or past ${SANITIZER_SECONDS:-300} s (tests.log)"; status=1; fi
}
# a syslab script run in the CSV folder, then PyTorch's rows of the same shapes into CSV there
tables() {
  if (cd "$csv" && bounded "$syslab" run "$root/bench/$1") >>"$out/bench.log" 2>&1; then note "bench/$1: done"
  else note "bench/$1: FAILED (bench.log)"; status=1; fi
  (LD_LIBRARY_PATH="" bounded python3 "$root/bench/$2" "$csv/$3") >>"$out/bench.log" 2>&1 ||
    note "bench/$2: FAILED or past the step's bound (bench.log)"
  tar -czf "$out/bench.tar.gz" -C "$csv" . 2>/dev/null
}
# benchmarks: syslab's kernels and PyTorch's rows, then the models on the device
step_bench() {
  tables gpu.sl torch_gpu.py anchors.csv
  # the models on the device last: the kernels' tables above are complete whatever happens here
  if bounded "$syslab" run "$root/bench/gpu_models.sl" >>"$out/bench.log" 2>&1; then note "bench/gpu_models.sl: done"
  else note "bench/gpu_models.sl: FAILED (bench.log)"; status=1; fi
}
# the language models from small to 2.7B: syslab's lm_bench and PyTorch's rows of the same shapes
step_lm() { tables gpu_lm.sl torch_lm_gpu.py lm_anchors.csv; }
# a lab notebook's report on this machine, without PDF (no Chromium here), into OUT/NAME.tar.gz
notebook() {
  rep=$build/$1-report
  rm -rf "$rep"
  if (cd "$root" && bounded "$syslab" report "notebooks/$1.ipynb" --no-pdf --no-cache -o "$rep") >>"$out/bench.log" 2>&1; then
    note "$1 report: passed"
  else
    note "$1 report: FAILED (bench.log)"; status=1
  fi
  [ -d "$rep" ] && tar -czf "$out/$1.tar.gz" -C "$rep" . 2>/dev/null
}
step_lab4() { notebook lab4; }
# the systems notebook, whose GPU section fills its tables on this machine
step_systems() { notebook systems; }
summarize() {
  {
    cat "$out/summary.head"
    echo
    LD_LIBRARY_PATH="" python3 "$root/bench/gpu_summary.py" "$csv"
  } >"$out/summary.md" 2>&1
}
for s in $steps; do
  case $s in
    tests | sanitizer | bench | lm | lab4 | systems) "step_$s" ;;
    *) note "GPU_CHECK_STEPS: unknown step '$s' (allowed: tests sanitizer bench lm lab4 systems)"; status=1 ;;
  esac
  summarize
done

summarize
rm -f "$out/summary.head"
cat "$out/summary.md"
exit $status
