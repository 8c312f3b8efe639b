#!/bin/bash
# Gathers, on a connected Debian 12 machine, every package a GPU host without
# registry access needs to build gpubench beside its PyTorch wheel: gRPC,
# Protocol Buffers, Abseil, RE2, c-ares, SQLite, cpp-httplib (with OpenSSL,
# brotli, zlib). Only apt-get download: nothing is installed here.
#   deploy/bundle.sh DIR        (default: bundle/ in the checkout, git-ignored)
# Then copy the checkout and DIR to the GPU host and run there:
#   deploy/build.sh --bundle DIR
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-bundle}
mkdir -p "$dir/debs"
dir=$(cd "$dir" && pwd)
# Development packages and the run-time libraries they name, Debian 12's.
pkgs="libgrpc++-dev libgrpc++1.51 libgrpc-dev libgrpc29 protobuf-compiler-grpc
  libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32
  libabsl-dev libabsl20220623 libre2-dev libre2-9 libc-ares-dev libc-ares2
  libsqlite3-dev libsqlite3-0 libcpp-httplib-dev libcpp-httplib0.11
  libssl-dev libssl3 libbrotli-dev libbrotli1 zlib1g-dev zlib1g
  libjpeg62-turbo-dev libjpeg62-turbo"
[ -n "$(ls /var/lib/apt/lists/*_Packages 2>/dev/null)" ] || apt-get update -qq >&2
(cd "$dir/debs" && apt-get download -q $pkgs >&2)
# Without root apt-get download leaves _apt's sandbox warning; the files are there.
cat > "$dir/README" <<'TXT'
Debian 12 packages for deploy/build.sh --bundle THIS_DIR (gathered by deploy/bundle.sh).
They are unpacked under THIS_DIR/root, never into /, and the binaries find their
libraries there through their RPATH: keep this directory where it is.
TXT
du -sh "$dir" >&2
echo "$dir"
