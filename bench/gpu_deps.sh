#!/bin/sh
# gpu_deps.sh - the Debian packages `make gpu-check` needs on a CUDA machine that lacks them.
#
#   make gpu-deps               (on a Debian 12 machine with syslab built: sh bench/gpu_deps.sh)
#
# Downloads into .gpu-deps/ (ignored by git) the packages of every shared
# library that syslab, gnuplot and pkgconf load, OpenBLAS (which syslab
# opens at run time, so ldd does not list it), the headers and pkg-config
# files the build needs, gnuplot's data and a font, and KaTeX (which the
# HTML report inlines). Left out: the C
# and C++ runtimes and the libraries every glibc system has (the list
# `base` below), which the CUDA machine's own, newer ones serve.
# bench/gpu_check.sh unpacks them into a prefix; docs/gpu.md says how the
# folder travels. GPU_DATA=1 adds Fashion-MNIST (30 MB, for the GPU tests
# that train on it).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
syslab=$root/${BUILD:-build}/syslab
[ -x "$syslab" ] || { echo "gpu_deps.sh: build syslab first (make build)" >&2; exit 1; }
for tool in gnuplot pkgconf apt-get dpkg; do
  command -v "$tool" >/dev/null || { echo "gpu_deps.sh: needs $tool (make deps)" >&2; exit 1; }
done
owner() { dpkg -S "$1" 2>/dev/null || dpkg -S "$(readlink -f "$1")" 2>/dev/null || true; }
loaded=$(for b in "$syslab" "$(command -v gnuplot)" "$(command -v pkgconf)"; do
  ldd "$b" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do owner "$lib"; done | cut -d: -f1 | sort -u)
extra="libopenblas0-pthread libopenblas0 libgfortran5 libquadmath0 libopenblas-dev libopenblas-pthread-dev
  libzmq3-dev libjansson-dev libssl-dev zlib1g-dev libcmark-gfm-dev libcmark-gfm-extensions-dev
  gnuplot-nox gnuplot-data pkgconf pkgconf-bin libpkgconf3 fonts-dejavu-core fontconfig-config
  libjs-katex fonts-katex"
[ "${GPU_DATA:-0}" = 1 ] && extra="$extra dataset-fashion-mnist"
base=" libc6 libgcc-s1 libstdc++6 zlib1g libselinux1 libblkid1 libmount1 libpcre2-8-0 liblzma5 libzstd1 libtinfo6 libcrypt1 "
keep=""
for p in $loaded $extra; do
  case "$base" in *" $p "*) ;; *) case " $keep " in *" $p "*) ;; *) keep="$keep $p" ;; esac ;; esac
done
rm -rf "$root/.gpu-deps" && mkdir -p "$root/.gpu-deps"
# shellcheck disable=SC2086
(cd "$root/.gpu-deps" && apt-get -q=2 download $keep 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
# The -dev packages' static libraries (OpenBLAS's alone is 30 MB unpacked),
# manuals and package documentation are never used there: repack the
# packages without them, so that the folder and the source tree travel
# together under a small limit
for deb in "$root"/.gpu-deps/*.deb; do
  dpkg-deb -c "$deb" | grep -E '(\.a|/usr/share/(doc|man)/.+)$' >/dev/null || continue
  tmp=$(mktemp -d)
  dpkg-deb -R "$deb" "$tmp/pkg"
  find "$tmp/pkg" -name '*.a' -delete
  rm -rf "$tmp/pkg/usr/share/doc" "$tmp/pkg/usr/share/man"
  dpkg-deb -Zxz --root-owner-group -b "$tmp/pkg" "$deb" >/dev/null
  rm -rf "$tmp"
done
n=$(ls "$root"/.gpu-deps/*.deb | wc -l)
echo "gpu_deps.sh: $n packages, $(du -sh "$root/.gpu-deps" | cut -f1), in .gpu-deps/"
