# gpu_env.sh - what bench/gpu_check.sh and bench/gpu_first.sh share, sourced
# by both: the machine's description, the project's Debian libraries
# carried in .gpu-deps/ (make gpu-deps) unpacked into the build folder,
# cuBLAS's folder, and the CUDA build. The caller sets root, build and out
# and defines note (one line for the summary).

# the machine: GPU, driver, clocks, CUDA, compilers, PyTorch, CPU
gpu_machine() {
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
}

# the carried packages, unpacked into a prefix inside the build folder; sets cmake_args
gpu_deps() {
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
  # cuBLAS is loaded at run time (cuda/cublas.cu) from the toolkit's lib64
  cuda_lib=$(dirname "$(dirname "$(command -v nvcc)")")/lib64
  [ -d "$cuda_lib" ] && export LD_LIBRARY_PATH="$cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  return 0
}

# the build with CUDA for the architectures $1 ("90", "80;90"), of the targets named after it (every one when
# none), Release, without the MPI module, logged into $out/build.log; 0 when it built
gpu_build() {
  archs=$1
  shift
  gen=""
  command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$build" $gen -DSYSLAB_CUDA=ON -DSYSLAB_MPI=OFF -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="$archs" $cmake_args >"$out/build.log" 2>&1 || return 1
  if [ $# -gt 0 ]; then
    cmake --build "$build" -j "$(nproc)" --target "$@" >>"$out/build.log" 2>&1
  else
    cmake --build "$build" -j "$(nproc)" >>"$out/build.log" 2>&1
  fi
}
