#!/bin/bash
# Installs, builds, runs the embedded default job on the best local device
# and prints its result table. Results go to ~/.local/share/gpubench/gpubench.db.
# Until gpubenchd serves SubmitJob, the CLI runs the worker directly.
set -euo pipefail
cd "$(dirname "$0")/.."
GPUBENCH_BUILD_TESTS=OFF ./deploy/test.sh >/dev/null 2>&1 || ./deploy/test.sh
./build/bin/gpubench run "$@"
