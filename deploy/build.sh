#!/bin/bash
# Builds gpubench; prints the build directory last.
#   deploy/build.sh                 Debian 12: installs what building lacks (apt), then
#                                   FLAVOUR=debian (default: Debian's libtorch 1.13, CPU) into
#                                   build/, or FLAVOUR=wheel (the PyTorch 2.11 wheel's LibTorch,
#                                   CUDA compiled in; pip installs it when missing) into
#                                   build-wheel/. Ubuntu 24.04 has the same package names.
#   deploy/build.sh --bundle DIR    a GPU host with only a compiler, CMake, ninja and the PyTorch
#                                   wheel, and no registry: the packages deploy/bundle.sh gathered
#                                   in DIR are unpacked under DIR/root (never into /), and the
#                                   wheel's LibTorch is built against into build-bundle/, tests
#                                   off (TESTS=1 builds them, with GoogleTest installed).
# Extra CMake arguments follow the options: deploy/build.sh --bundle DIR -DX=ON
set -euo pipefail
cd "$(dirname "$0")/.."
FLAVOUR=${FLAVOUR:-debian}
bundle=""
if [ "${1:-}" = --bundle ]; then
  [ -n "${2:-}" ] && [ -d "$2/debs" ] || { echo "usage: deploy/build.sh --bundle DIR (from deploy/bundle.sh)" >&2; exit 2; }
  bundle=$(cd "$2" && pwd)
  shift 2
  FLAVOUR=wheel
fi
torch_prefix() { python3 -c 'import torch;print(torch.utils.cmake_prefix_path)' 2>/dev/null; }
# Unity builds (a faster first build: headers parsed and LibTorch's
# templates instantiated once per batch of files) of the engine and of the
# torch-free code with Debian's LibTorch; file by file with the wheel's (CUDA
# sources, GPU hosts with many cores). UNITY=ON/OFF overrides.
unity=$([ "$FLAVOUR" = debian ] && echo ON || echo OFF)
args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DGPUBENCH_UNITY_ENGINE=${UNITY:-$unity}"
      "-DGPUBENCH_UNITY=${UNITY:-$unity}")
if [ -n "$bundle" ]; then
  root=$bundle/root
  if [ ! -f "$root/.unpacked" ]; then
    rm -rf "$root" && mkdir -p "$root"
    for deb in "$bundle"/debs/*.deb; do dpkg-deb -x "$deb" "$root"; done
    touch "$root/.unpacked"
  fi
  lib=$root/usr/lib/x86_64-linux-gnu
  tp=$(torch_prefix) || { echo "no PyTorch wheel for python3 (pip install torch==2.11.0 where a registry is reachable)" >&2; exit 1; }
  export PATH=$root/usr/bin:$PATH
  export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # protoc while building
  # The packages' .pc files say prefix=/usr: the sysroot puts them under root.
  export PKG_CONFIG_PATH=$lib/pkgconfig:$root/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
  link="-L$lib -Wl,--disable-new-dtags,-rpath,$lib"
  # No libpq in the bundle: the GPU host's CLI exports JSON Lines only (the
  # system's libpq.pc would point pkg-config into the sysroot).
  args+=(-DGPUBENCH_POSTGRES=OFF)
  args+=("-DCMAKE_PREFIX_PATH=$root/usr;$tp" "-DCMAKE_EXE_LINKER_FLAGS=$link"
         "-DCMAKE_SHARED_LINKER_FLAGS=$link" "-DGPUBENCH_BUILD_TESTS=${TESTS:-0}")
  build=build-bundle
else
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  pkgs="cmake ninja-build g++ ccache pkg-config libgrpc++-dev protobuf-compiler-grpc
    libprotobuf-dev protobuf-compiler libabsl-dev libsqlite3-dev libcpp-httplib-dev zlib1g-dev
    libgtest-dev libgmock-dev libjpeg62-turbo-dev libpq-dev"
  # libgloo-dev: the headers of the Gloo Debian's LibTorch links (ddp, collective on the CPU).
  # libopenblas0-openmp: Debian's LibTorch multiplies through libblas.so.3, which is Netlib's
  # reference BLAS (about 4 GFLOP/s) unless an optimised one is installed; the OpenMP
  # build, as LibTorch threads with OpenMP (the pthread one warns of hangs inside its loops).
  [ "$FLAVOUR" = wheel ] || pkgs="$pkgs libtorch-dev libgloo-dev libopenblas0-openmp"
  missing=$(for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
  if [ -n "$missing" ]; then
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing >&2
  fi
  build=build
  if [ "$FLAVOUR" = wheel ]; then
    python3 -c 'import torch, sys; sys.exit(not torch.__version__.startswith("2.11.0"))' 2>/dev/null \
      || python3 -m pip install -q torch==2.11.0 >&2
    args+=("-DCMAKE_PREFIX_PATH=$(torch_prefix)")
    build=build-wheel
  fi
fi
generator=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
cmake -S . -B "$build" -G "$generator" "${args[@]}" "$@" >&2
# TARGETS (e.g. the three programs, as quickstart.sh builds): only those.
cmake --build "$build" -j "$(nproc)" ${TARGETS:+--target $TARGETS} >&2
echo "$build"
