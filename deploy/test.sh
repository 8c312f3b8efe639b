#!/bin/bash
# Installs, builds (deploy/build.sh; FLAVOUR=debian or wheel) and runs the
# test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(./deploy/build.sh)
cd "$build" && ctest --output-on-failure
