#!/bin/bash
# Compiled execution's cold start (issue 18): the same --execution aot job
# twice (the first compiles, the second must find the package in the cache
# and start within 2x the eager cold start), and the eager job once, each in
# a fresh worker. Prints, per job: compile seconds, cached, cold start (the
# first iteration), the job's wall time and throughput.
# Usage, in the checkout root of a GPU host after deploy/build.sh --bundle DIR:
#   OUT=/tmp/aot-cold bash bench/gpu_aot_cold.sh ["gpubench flags"]
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50083}" || exit 1
flags=${1:-"--workload resnet50 --device cuda --mode infer --batch 256 --precision fp16 --channels-last true"}
rule="--warmup 10 --min-time-ms 1000 --max-time-ms 4000 --cudnn-benchmark true"
printf '%-10s %10s %7s %14s %10s %12s\n' job compile_s cached cold_start_ms wall_s samples/s
for execution in aot aot eager; do
  start=$(date +%s.%N)
  job=$("$B/gpubench" submit $rule $flags --execution $execution 2>> "$OUT/err")
  "$B/gpubench" watch "$job" > "$OUT/$job.txt" 2>> "$OUT/err"
  wall=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
         "$start" "$(date +%s.%N)")
  "$B/gpubench" show "$job" --output json | python3 -c "
import json, sys
run = json.load(sys.stdin)['runs'][0]
r = run.get('result', {})
print('%-10s %10.1f %7s %14.1f %10s %12.1f %s' % ('$execution', r.get('compile_ms', 0) / 1e3,
      'yes' if r.get('compile_cached') else 'no', r.get('cold_start_ms', 0), '$wall',
      r.get('throughput_samples_per_s', 0), run.get('error', '')[:200]))"
done
