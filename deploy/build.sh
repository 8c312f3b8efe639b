#!/bin/bash
# Installs what a fresh Debian bookworm machine lacks and builds gpubench.
# FLAVOUR=debian (default: Debian's libtorch 1.13, CPU) builds into build/;
# FLAVOUR=wheel (the PyTorch 2.11 wheel's LibTorch, CUDA compiled in) into
# build-wheel/. Prints the build directory last.
set -euo pipefail
cd "$(dirname "$0")/.."
FLAVOUR=${FLAVOUR:-debian}
SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
pkgs="cmake ninja-build g++ ccache pkg-config libgrpc++-dev protobuf-compiler-grpc
  libprotobuf-dev protobuf-compiler libabsl-dev libsqlite3-dev zlib1g-dev libgtest-dev
  libgmock-dev libtorch-dev"
missing=$(for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing >&2
fi
args=()
build=build
if [ "$FLAVOUR" = wheel ]; then
  python3 -c 'import torch, sys; sys.exit(not torch.__version__.startswith("2.11.0"))' 2>/dev/null \
    || python3 -m pip install -q torch==2.11.0 >&2
  args+=("-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)' 2>/dev/null)")
  build=build-wheel
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${args[@]}" >&2
cmake --build "$build" -j "$(nproc)" >&2
echo "$build"
