#!/bin/bash
# Installs, builds, starts a local gpubenchd on 127.0.0.1 (SQLite file under
# the user's data directory), submits the embedded default job through the
# CLI and prints its result table. Extra arguments go to `gpubench submit`,
# e.g. ./deploy/quickstart.sh --workload resnet18 --batch 16,32
# A daemon already listening on $GPUBENCH_HOST (default 127.0.0.1:50051) is
# reused; one started here is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# The three programs only, not the tests (deploy/test.sh builds those),
# without debug information, and without ccache (a cold cache only costs): a
# first run's build is most of its time. On a 2-core machine (Debian's
# LibTorch, the engine a unity build as deploy/build.sh makes it), 183 s,
# against 280 s file by file with a cold ccache and 311 s in RelWithDebInfo.
build=$(CCACHE_DISABLE=1 TARGETS="gpubenchd gpubench gpubench-worker" \
        ./deploy/build.sh -DCMAKE_BUILD_TYPE=Release)
bin=$build/bin
export GPUBENCH_HOST=${GPUBENCH_HOST:-127.0.0.1:50051}
daemon=""
if ! "$bin/gpubench" jobs >/dev/null 2>&1; then
  "$bin/gpubenchd" --listen "$GPUBENCH_HOST" &
  daemon=$!
  trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null || true' EXIT
  for _ in $(seq 100); do
    "$bin/gpubench" jobs >/dev/null 2>&1 && break
    kill -0 $daemon 2>/dev/null || { echo "gpubenchd did not start" >&2; exit 1; }
    sleep 0.2
  done
fi
"$bin/gpubench" submit --wait "$@"
