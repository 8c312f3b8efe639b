#!/bin/bash
# Installs what a fresh Debian bookworm machine lacks, builds, and runs the
# test suite. FLAVOUR=debian (default: Debian's libtorch 1.13, CPU) or
# FLAVOUR=wheel (the PyTorch 2.11 wheel's LibTorch, with CUDA compiled in).
set -euo pipefail
cd "$(dirname "$0")/.."
FLAVOUR=${FLAVOUR:-debian}
SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
pkgs="cmake ninja-build g++ ccache pkg-config libgrpc++-dev protobuf-compiler-grpc
  libprotobuf-dev protobuf-compiler libabsl-dev libsqlite3-dev libgtest-dev libgmock-dev
  libtorch-dev"
missing=$(for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing
fi
args=()
build=build
if [ "$FLAVOUR" = wheel ]; then
  python3 -c 'import torch, sys; sys.exit(not torch.__version__.startswith("2.11.0"))' 2>/dev/null \
    || python3 -m pip install -q torch==2.11.0
  args+=("-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')")
  build=build-wheel
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${args[@]}"
cmake --build "$build" -j "$(nproc)"
cd "$build" && ctest --output-on-failure
