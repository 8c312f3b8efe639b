#!/bin/bash
# `gpubench run` on a GPU host (issue 15): no daemon started by hand; the CLI
# starts a gpubenchd for the job on a private unix socket in the data
# directory, follows it and stops it. Then the same with a daemon already
# serving the directory (the job goes to it), and a second daemon on that
# directory (refused). Usage, in the checkout root after deploy/build.sh --bundle DIR -DCMAKE_BUILD_TYPE=Release
#   (the build the committed figures used; BUILD=build-wheel after FLAVOUR=wheel deploy/build.sh):
#   OUT=/tmp/run-smoke bash bench/gpu_run_smoke.sh
set -uo pipefail
B=${BUILD:-build-bundle}/bin
OUT=${OUT:-/tmp/gpubench-run-smoke}
mkdir -p "$OUT"
data="$OUT/data"
rm -rf "$data"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
args=(--workload resnet50 --device cuda --batch 32 --mode infer --precision fp16
      --channels-last true --execution eager,cuda_graph --warmup 5 --min-iterations 50
      --min-time-ms 1000 --max-time-ms 8000)
echo "== 1. gpubench run ${args[*]} --data-dir $data   (no daemon running)"
time "$B/gpubench" run "${args[@]}" --data-dir "$data"
echo "exit $?; lock left behind: $(cat "$data/gpubenchd.lock" 2>/dev/null || echo none)"
echo "== 2. a daemon serves the directory; gpubench run gives it the job"
"$B/gpubenchd" --data-dir "$data" --listen 127.0.0.1:0 --port-file "$OUT/port" 2>"$OUT/daemon.log" &
pid=$!
for _ in $(seq 300); do [ -s "$OUT/port" ] && break; sleep 0.1; done
"$B/gpubench" run --workload matmul --device cuda --matmul-size 8192 --precision bf16 \
  --min-time-ms 500 --max-time-ms 3000 --data-dir "$data"
echo "exit $?"
echo "== 3. a second daemon on the same directory"
"$B/gpubenchd" --data-dir "$data" --listen 127.0.0.1:0; echo "exit $?"
kill -TERM $pid; wait $pid; echo "daemon exit $?"
echo "== every job in the directory (the CLI alone, through a fresh run daemon)"
"$B/gpubenchd" --data-dir "$data" --listen "unix:$OUT/sock" --port-file "$OUT/port2" 2>>"$OUT/daemon.log" &
pid=$!
for _ in $(seq 300); do [ -s "$OUT/port2" ] && break; sleep 0.1; done
"$B/gpubench" jobs --host "unix:$OUT/sock"
kill -TERM $pid; wait $pid
