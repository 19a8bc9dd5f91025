#!/bin/sh
# gpu_first.sh - the first command on a GPU machine: do the models train on
# the GPU and agree with the CPU, then the figures, within one time budget.
#
#   make gpu-first OUT=DIR      (or: sh bench/gpu_first.sh DIR)
#
# A GPU machine may be had for minutes at a time (docs/gpu.md), so this one
# command is made so that it cannot waste itself: it builds only what it
# runs, for the GPU it finds (sm_90 alone on Hopper), then runs its steps in
# order of what matters, each program bounded by what is left of
# GPU_FIRST_SECONDS (540 by default, from the script's start), and rewrites
# the summary and the tables after every step (and every language-model
# row), so that a command killed at its limit has already brought back all
# it finished. Steps (GPU_FIRST_STEPS, in this order by default):
#   tests      test_gpu_graph (the MLP, image transformer, language model and
#              fused attention trained on both devices, float32, bf16, fp16:
#              losses and weights against the CPU's), test_gpu_ops, and
#              test_kernels gpu; a test that fails runs once more with
#              CUDA_LAUNCH_BLOCKING=1 so that a fault names its kernel
#   models     bench/gpu_models.sl: the models on both devices, timed
#   lm         one lm_bench call (its own process) per preset and precision
#              (GPU_FIRST_PRESETS, GPU_FIRST_PRECISIONS) at context
#              GPU_FIRST_CONTEXT (512), batch 4, so that a crash loses one
#              row; then PyTorch eager on the same shapes (bench/torch_lm_gpu.py)
#   kernels    bench/gpu_first.sl: the roofs, bf16 GEMM, the tensor-core
#              attention (a process each); PyTorch's rows of the same shapes
#              (bench/torch_gpu.py)
#   sanitizer  compute-sanitizer memcheck and racecheck on the GPU tests
#              with their small shapes, in what time is left; skipped with
#              the reason where it cannot open the device
# and two steps for a second command, named in GPU_FIRST_STEPS when wanted:
#   compile    PyTorch's torch.compile of the presets in COMPILE_PRESETS
#              (small) at the same shapes, float32 and bf16
#   systems    `syslab report notebooks/lab4.ipynb notebooks/systems.ipynb
#              --no-pdf --allow-errors`, whose GPU sections run on the
#              device, into reports.tar.gz
# What OUT receives (at most eight files):
#   summary.md      the verdicts first, then the models' losses on both
#                   devices, then every figure, each naming the GPU
#   machine.txt     GPU, driver, CUDA, clocks, compilers, PyTorch
#   build.log       configure and build
#   tests.log       the GPU tests' output
#   bench.log       the benchmarks' output, syslab's and PyTorch's
#   sanitizer.log   compute-sanitizer's output
#   tables.tar.gz   every table as CSV (gpu.txt names the GPU)
#   reports.tar.gz  (step systems) the Lab 4 and systems notebooks' report
# On a machine without a GPU every step says it skipped and why (the dry
# run: tests/python/test_gpu_first.py). GPU_FIRST_BUILD=0 uses the binaries
# already in GPU_BUILD; GPU_FIRST_DEVICE=cpu runs the language-model rows on
# the CPU (their plumbing, checked without a GPU). The exit status is 0 when
# the build and every test that ran passed.
set -u
out=${1:?usage: gpu_first.sh OUT}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GPU_BUILD:-$root/build-gpu}
mkdir -p "$out" "$build" || exit 1
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd)
budget=${GPU_FIRST_SECONDS:-540}
steps=${GPU_FIRST_STEPS:-tests models lm kernels sanitizer}
presets=${GPU_FIRST_PRESETS:-small medium large xl 2.7B}
precisions=${GPU_FIRST_PRECISIONS:-fp32 bf16}
context=${GPU_FIRST_CONTEXT:-512}
device=${GPU_FIRST_DEVICE:-gpu}
start=$(date +%s)
status=0
csv=$build/first-csv
rm -rf "$csv" && mkdir -p "$csv"
for f in summary.md tests.log bench.log sanitizer.log; do : >"$out/$f"; done
: >"$build/summary.head"   # the verdicts; OUT holds only the files it returns
note() { echo "== $*" | tee -a "$build/summary.head"; }

# seconds left of the budget, less a few for the last summary
left() { echo $((budget - ($(date +%s) - start) - 5)); }
# a program bounded by the smaller of $1 seconds and what is left; 200 when no time was left for it
bounded() {
  cap=$1
  shift
  l=$(left)
  [ "$l" -lt "$cap" ] && cap=$l
  [ "$cap" -lt 5 ] && return 200
  timeout -k 5 "$cap" "$@"
}
# a program's output appended to a log ($1) as it comes; the log's last line then kept in $build/last
logged() {
  log=$1
  shift
  "$@" >>"$log" 2>&1
  rc=$?
  tail -n 1 "$log" | cut -c1-200 >"$build/last"
  return $rc
}
# why a bounded program stopped, from its exit status
ended() {
  case $1 in
    0) echo "passed" ;;
    124 | 137) echo "stopped at its time bound" ;;
    200) echo "not run: the budget was spent" ;;
    *) echo "exit $1" ;;
  esac
}

summarize() {
  {
    cat "$build/summary.head"
    echo
    LD_LIBRARY_PATH="" python3 "$root/bench/gpu_summary.py" "$csv" --tests "$out/tests.log" --first
  } >"$build/summary.tmp" 2>&1
  mv "$build/summary.tmp" "$out/summary.md"
  tar -czf "$build/tables.tmp" -C "$csv" . 2>/dev/null && mv "$build/tables.tmp" "$out/tables.tar.gz"
}

# --- the machine, and the GPU it has
. "$root/bench/gpu_env.sh"
gpu_machine >"$out/machine.txt"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
why_none="no GPU: nvidia-smi finds none"
if [ -n "$gpu" ]; then
  note "GPU: $gpu (compute capability $cap)"
else
  note "$why_none: every GPU step below is skipped"
fi
echo "${gpu:-no GPU}" >"$csv/gpu.txt"

# --- the build: this GPU's architecture alone (sm_90 on an H100 or H200), the programs the steps run and the
# CUDA module they load (syslab_cuda.so, found in the build folder)
gpu_deps
targets="syslab_cuda syslab test_gpu_graph test_gpu_ops test_kernels"
if [ "${GPU_FIRST_BUILD:-1}" = 0 ]; then
  echo "not built (GPU_FIRST_BUILD=0): the programs in $build" >"$out/build.log"
  note "build: not asked for (GPU_FIRST_BUILD=0): the programs in $build"
elif gpu_build "${CUDA_ARCHS:-${cap:-90}}" $targets; then
  note "build: passed for sm_${CUDA_ARCHS:-${cap:-90}} in $(($(date +%s) - start)) s"
else
  note "build: FAILED (build.log)"
  tail -n 30 "$out/build.log"
  summarize
  exit 1
fi
syslab=$build/syslab
"$syslab" --version >>"$out/machine.txt" 2>&1
# what syslab finds through its CUDA module: the GPU, or why none (no module built, the module's load error, the
# driver's reason)
sees=$(echo 'print (version).gpu' | "$syslab" run - 2>/dev/null)
echo "syslab's GPU: $sees" >>"$out/machine.txt"
[ -n "$gpu" ] && note "syslab's GPU (its CUDA module): $sees"
[ -z "$gpu" ] && why_none=$sees

# --- the GPU tests: the models first, then the operators and the kernels
gpu_test() {
  name=$1
  shift
  echo "== $name $*" >>"$out/tests.log"
  bounded "${TEST_SECONDS:-180}" env "$@" "$build/$name" ${arg:+"$arg"} >>"$out/tests.log" 2>&1
  rc=$?
  if [ $rc = 0 ]; then
    note "$name${arg:+ $arg}: passed$([ -z "$gpu" ] && echo " (its GPU side skipped: $why_none)")"
    return
  fi
  status=1
  if [ $rc = 124 ] || [ $rc = 137 ] || [ $rc = 200 ]; then
    note "$name${arg:+ $arg}: FAILED: $(ended $rc) (tests.log)"
    return
  fi
  echo "== $name${arg:+ $arg} failed ($(ended $rc)): once more with CUDA_LAUNCH_BLOCKING=1, so that a fault names its kernel" >>"$out/tests.log"
  bounded "${TEST_SECONDS:-180}" env CUDA_LAUNCH_BLOCKING=1 "$@" "$build/$name" ${arg:+"$arg"} >>"$out/tests.log" 2>&1
  note "$name${arg:+ $arg}: FAILED ($(ended $rc); with CUDA_LAUNCH_BLOCKING=1: $(ended $?)) (tests.log)"
}
step_tests() {
  arg="" gpu_test test_gpu_graph
  arg="" gpu_test test_gpu_ops
  arg=gpu gpu_test test_kernels
}

# --- the models on both devices, timed
step_models() {
  echo "== bench/gpu_models.sl" >>"$out/bench.log"
  bounded "${MODELS_SECONDS:-150}" "$syslab" run "$root/bench/gpu_models.sl" >>"$out/bench.log" 2>&1
  rc=$?
  [ $rc = 0 ] || status=1
  if [ -z "$gpu" ]; then note "bench/gpu_models.sl: skipped ($why_none)"
  else note "bench/gpu_models.sl: $(ended $rc | sed 's/passed/done/') (bench.log)"; fi
}

# --- the language models: one process a row, then PyTorch eager on the same shapes
lm_row() {
  p=$1 prec=$2 table=$csv/lm_$1_$2.csv
  printf 't = lm_bench presets=["%s"] contexts=[%s] warmups=[1] steps=%s batch=4 device="%s" precision="%s"\nsave t "%s"\nprint t\n' \
    "$p" "$context" "${LM_STEPS:-3}" "$device" "$prec" "$table" >"$build/lm_row.sl"
  echo "== lm_bench $p $prec, context $context, on the $device" >>"$out/bench.log"
  bounded "${LM_ROW_SECONDS:-150}" "$syslab" run "$build/lm_row.sl" >>"$out/bench.log" 2>&1
  rc=$?
  if [ ! -s "$table" ]; then   # the process died or was stopped: a row says so
    printf 'config,context,status_fwd,status_train\n%s,%s,%s,%s\n' "$p" "$context" "no row: $(ended $rc)" \
      "no row: $(ended $rc)" >"$table"
    status=1
  fi
  note "lm_bench $p $prec: $(LD_LIBRARY_PATH="" python3 -c '
import csv, sys
r = next(csv.DictReader(open(sys.argv[1])))
print("forward", r["status_fwd"][:120], "/ forward+backward", r["status_train"][:120],
      *(["/", r["mean_s_train"], "s a step"] if r.get("mean_s_train") else []))' "$table" 2>&1)"
}
step_lm() {
  if [ "$device" = gpu ] && [ -z "$gpu" ]; then
    note "language models: skipped ($why_none)"
    return
  fi
  for p in $presets; do
    for prec in $precisions; do
      lm_row "$p" "$prec"
      summarize
    done
  done
  echo "== PyTorch eager, the same shapes" >>"$out/bench.log"
  LD_LIBRARY_PATH="" PYTHONUNBUFFERED=1 PRESETS="$presets" CONTEXTS="$context" MODES=eager \
    DEVICE="$([ "$device" = gpu ] && echo cuda || echo cpu)" STEPS="${LM_STEPS:-3}" \
    logged "$out/bench.log" bounded "${TORCH_SECONDS:-240}" python3 "$root/bench/torch_lm_gpu.py" "$csv/lm_anchors.csv"
  rc=$?
  note "PyTorch eager: $(ended $rc | sed 's/passed/done/')$([ $rc = 0 ] || echo ": $(cat "$build/last")") (bench.log)"
}

# --- the roofs, bf16 GEMM and the tensor-core attention, syslab's and PyTorch's
step_kernels() {
  if [ -z "$gpu" ]; then
    note "kernels: skipped ($why_none)"
    return
  fi
  for part in roofs bf16 attention; do
    echo "== bench/gpu_first.sl, part $part" >>"$out/bench.log"
    { echo "part = \"$part\""; cat "$root/bench/gpu_first.sl"; } >"$build/kernels.sl"
    (cd "$csv" && logged "$out/bench.log" bounded "${KERNELS_SECONDS:-90}" "$syslab" run "$build/kernels.sl")
    rc=$?
    [ $rc = 0 ] || status=1
    note "bench/gpu_first.sl, $part: $(ended $rc | sed 's/passed/done/')$([ $rc = 0 ] || echo ": $(cat "$build/last")") (bench.log)"
    summarize
  done
  LD_LIBRARY_PATH="" PYTHONUNBUFFERED=1 TORCH_ROWS="roofs bf16 attention_bf16" TORCH_ATTN_SIZES="1024 4096 16384" \
    logged "$out/bench.log" bounded "${TORCH_SECONDS:-120}" python3 "$root/bench/torch_gpu.py" "$csv/anchors.csv"
  rc=$?
  note "PyTorch's kernels: $(ended $rc | sed 's/passed/done/')$([ $rc = 0 ] || echo ": $(cat "$build/last")") (bench.log)"
}

# --- compute-sanitizer in the time left
sanitize() {
  tool=$1 name=$2
  shift 2
  echo "== compute-sanitizer --tool $tool $name $*" >>"$out/sanitizer.log"
  from=$(($(wc -c <"$out/sanitizer.log") + 1))
  SYSLAB_GPU_TEST_SMALL=1 bounded "${SANITIZER_SECONDS:-120}" compute-sanitizer --tool "$tool" --error-exitcode 3 \
    "$build/$name" "$@" >>"$out/sanitizer.log" 2>&1
  rc=$?
  # under gVisor it cannot open the device: "Device not supported", then error 999
  cannot=$(tail -c +"$from" "$out/sanitizer.log" | grep -i -m1 -e "device not supported" -e "error 999" -e "not supported on this")
  if [ -n "$cannot" ]; then
    note "compute-sanitizer: skipped (it cannot open the device: $(echo "$cannot" | cut -c1-160))"
    return 1
  fi
  [ $rc = 0 ] || status=1
  note "compute-sanitizer $tool $name $*: $(ended $rc | sed 's/passed/clean/')$([ $rc = 3 ] && echo ', errors found') (sanitizer.log)"
}
step_sanitizer() {
  if [ -z "$gpu" ]; then
    note "compute-sanitizer: skipped ($why_none)"
  elif ! command -v compute-sanitizer >/dev/null 2>&1; then
    note "compute-sanitizer: skipped (not installed here)"
  else
    sanitize memcheck test_kernels gpu && sanitize memcheck test_gpu_graph && sanitize memcheck test_gpu_ops &&
      sanitize racecheck test_kernels gpu && sanitize racecheck test_gpu_ops
  fi
}

# --- for a second command: torch.compile of a preset, and the Lab 4 and systems notebooks' report
step_compile() {
  if [ "$device" = gpu ] && [ -z "$gpu" ]; then
    note "torch.compile: skipped ($why_none)"
    return
  fi
  compiled=${COMPILE_PRESETS:-small}
  LD_LIBRARY_PATH="" PYTHONUNBUFFERED=1 PRESETS="$compiled" COMPILE_PRESETS="$compiled" CONTEXTS="$context" \
    MODES=compile DEVICE="$([ "$device" = gpu ] && echo cuda || echo cpu)" \
    STEPS="${LM_STEPS:-3}" logged "$out/bench.log" bounded "${COMPILE_SECONDS:-300}" python3 \
    "$root/bench/torch_lm_gpu.py" "$csv/lm_compiled.csv"
  rc=$?
  note "torch.compile of $compiled: $(ended $rc | sed 's/passed/done/')$([ $rc = 0 ] || echo ": $(cat "$build/last")") (bench.log)"
}
step_systems() {
  rep=$build/systems-report
  rm -rf "$rep"
  # --allow-errors: a cell that cannot run there (the data-parallel cells
  # need MPI, which a build from the carried packages lacks) is reported
  # with its error, and the GPU sections after it still run
  (cd "$root" && bounded "${SYSTEMS_SECONDS:-400}" "$syslab" report notebooks/lab4.ipynb notebooks/systems.ipynb \
    --no-pdf --no-cache --allow-errors -o "$rep") >>"$out/bench.log" 2>&1
  rc=$?
  failed=$(grep -c '^  \[[0-9]*/[0-9]*\] cell [0-9]*: .*error:' "$out/bench.log")
  [ -s "$rep/report.md" ] || status=1
  note "the Lab 4 and systems notebooks' report: $(ended $rc)$([ "$failed" = 0 ] || echo ", $failed cells failed (bench.log)") (reports.tar.gz)"
  [ -d "$rep" ] && tar -czf "$out/reports.tar.gz" -C "$rep" . 2>/dev/null
}

for s in $steps; do
  if [ "$(left)" -lt 10 ]; then
    note "$s: not run, the budget of $budget s is spent"
    continue
  fi
  case $s in
    tests | models | lm | kernels | sanitizer | compile | systems) "step_$s" ;;
    *) note "GPU_FIRST_STEPS: unknown step '$s' (allowed: tests models lm kernels sanitizer compile systems)"; status=1 ;;
  esac
  summarize
done
note "done in $(($(date +%s) - start)) s of the budget of $budget"
summarize
cat "$out/summary.md"
exit $status
