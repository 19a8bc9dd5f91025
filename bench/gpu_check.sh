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

# --- the machine
{
  date -u '+%Y-%m-%d %H:%M UTC'
  uname -srm
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem,power.limit \
    --format=csv 2>&1
  nvidia-smi 2>&1 | grep -m1 "CUDA Version"
  nvcc --version 2>&1 | tail -n 2
  cmake --version 2>&1 | head -n 1
  cc --version 2>&1 | head -n 1
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1
  grep -m1 "model name" /proc/cpuinfo
  nproc
} >"$out/machine.txt"

# --- carried Debian packages, unpacked into a prefix
cmake_args=""
if [ -d "$root/.gpu-deps" ] && ls "$root"/.gpu-deps/*.deb >/dev/null 2>&1; then
  prefix=$build/prefix
  rm -rf "$prefix" && mkdir -p "$prefix"
  for deb in "$root"/.gpu-deps/*.deb; do dpkg-deb -x "$deb" "$prefix" || exit 1; done
  lib=$prefix/usr/lib/x86_64-linux-gnu
  # the .pc files name /usr: point them at the prefix; private requirements
  # only matter to static linking, and their packages are not carried
  # (OpenBLAS's .pc is reached on Debian through the alternatives system, not unpacked here)
  pcdirs="$lib/pkgconfig:$lib/openblas-pthread/pkgconfig:$prefix/usr/share/pkgconfig"
  for pc in "$lib"/pkgconfig/*.pc "$lib"/openblas-pthread/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed -i -e "s|=/usr|=$prefix/usr|" -e "s| /usr/| $prefix/usr/|g" -e '/^Requires.private/d' "$pc"
  done
  # the -dev packages' libfoo.so links are absolute (/usr/lib/...): relink them inside the prefix
  find "$prefix" -type l | while read -r link; do
    target=$(readlink "$link")
    case $target in /*) ln -sf "$prefix$target" "$link" ;; esac
  done
  export PKG_CONFIG_LIBDIR="$pcdirs"
  export LD_LIBRARY_PATH="$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$prefix/usr/bin:$PATH"
  # /usr/bin/gnuplot is an alternatives link that the package's scripts make, not its files
  [ -e "$prefix/usr/bin/gnuplot" ] || ln -s gnuplot-nox "$prefix/usr/bin/gnuplot"
  # Debian keeps some headers (OpenSSL's configuration.h) in the multiarch
  # folder its compiler searches by default; a foreign compiler needs it named
  export CPATH="$prefix/usr/include/x86_64-linux-gnu:$prefix/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  # fontconfig for gnuplot's PNG terminal: the carried fonts only
  mkdir -p "$build/fontconfig"
  printf '<?xml version="1.0"?>\n<fontconfig><dir>%s/usr/share/fonts</dir><cachedir>%s/fontconfig</cachedir></fontconfig>\n' \
    "$prefix" "$build" >"$build/fontconfig/fonts.conf"
  export FONTCONFIG_FILE="$build/fontconfig/fonts.conf"
  export GNUPLOT_LIB="$prefix/usr/share/gnuplot/5.4"
  cmake_args="-DPKG_CONFIG_EXECUTABLE=$prefix/usr/bin/pkgconf -DCMAKE_PREFIX_PATH=$prefix/usr"
  cmake_args="$cmake_args -DOPENSSL_ROOT_DIR=$prefix/usr -DZLIB_ROOT=$prefix/usr"
  note "carried packages: $(ls "$root"/.gpu-deps/*.deb | wc -l) unpacked into the build folder"
  # Fashion-MNIST (GPU_DATA=1) and KaTeX are read from their packages' fixed folders
  for data in /usr/share/datasets/fashion-mnist /usr/share/javascript/katex; do
    [ ! -d "$data" ] && [ -d "$prefix$data" ] || continue
    if mkdir -p "$(dirname "$data")" 2>/dev/null && ln -s "$prefix$data" "$data" 2>/dev/null; then
      note "the carried $(basename "$data") linked at $data"
    else
      note "$(basename "$data") carried, but $data cannot be made here: the steps that read it will fail"
    fi
  done
fi
# cuBLAS is loaded at run time (cuda/kernels.cu) from the toolkit's lib64
cuda_lib=$(dirname "$(dirname "$(command -v nvcc)")")/lib64
[ -d "$cuda_lib" ] && export LD_LIBRARY_PATH="$cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# --- build: CUDA for Hopper (sm_90) and Ampere (sm_80), no MPI module
gen=""
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
# shellcheck disable=SC2086
if cmake -S "$root" -B "$build" $gen -DSYSLAB_CUDA=ON -DSYSLAB_MPI=OFF -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-80;90}" $cmake_args >"$out/build.log" 2>&1 &&
   cmake --build "$build" -j "$(nproc)" >>"$out/build.log" 2>&1; then
  note "build: passed"
else
  note "build: FAILED (build.log)"
  tail -n 30 "$out/build.log"
  exit 1
fi
syslab=$build/syslab
"$syslab" --version >>"$out/machine.txt" 2>&1

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
