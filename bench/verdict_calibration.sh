#!/bin/bash
# Calibrates compare's verdicts (issue 16) on this host: how often identical
# jobs are called different (A/A), and how often a planted slowdown of known
# size is found. Each pair is one `gpubench compare A.json B.json --repeat R`:
# R runs a side, alternating A B A B in fresh worker processes.
#
#   bench/verdict_calibration.sh [--device cpu|cuda] [--pairs N] [--repeat R]
#                                [--cases NAME,...] [--bin DIR] [--runs-out FILE]
#
# MEASURE overrides the measurement flags of every job (default below).
# --runs-out writes every run the daemon measured (JSON, newest first: each
# run's config, throughput, telemetry and contention) for a closer look at
# where the noise comes from (bench/verdict_runs.py reads it).
#
# Cases (the planted ones change real work by a known amount):
#   cpu:  mlp_aa         mlp train b16, A/A
#         host_aa        mlp train b16 fed by the host pipeline (1 thread, 400 us
#                        of CPU per sample), A/A
#         host_plus10    the same, B with 440 us per sample: +10% of the planted
#                        cost, about +9% of the step
#   cuda: gpu_aa         matmul 8192 fp16 (GPU-bound), A/A
#         gpu_plus3      B with K = 8448: +3.1% FLOPs on the same grid of
#                        output tiles, so +3.1% of the time (each tile's loop
#                        over K is 3.1% longer)
#         gpu_square3    B with M = N = K = 8272: +3.0% FLOPs, but a bigger
#                        grid runs at a higher rate (on the H100 +1.5% time);
#                        not in the default set
#         host_aa        mlp train b16 eager (host-bound), A/A
#         host_plus10    host pipeline, 400 vs 440 us of CPU per sample
# Prints one line per pair, then a table: verdicts per case, the median
# measured ratio, and the time taken. Goals: A/A claims a difference in at
# most 5% of pairs; +3% (GPU-bound) and +10% (host-bound) found in 90%.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin device=cpu pairs=20 repeat=5 cases="" runs_out=""
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --runs-out) runs_out=$2; shift 2 ;;
    *) echo "verdict_calibration: unknown argument $1" >&2; exit 2 ;;
  esac
done
measure=${MEASURE:-"--warmup 20 --min-iterations 20 --min-time-ms 500 --max-time-ms 3000"}
host="--input host --loader-threads 0"
declare -A A B K
if [ "$device" = cpu ]; then
  all="mlp_aa host_aa host_plus10"
  A[mlp_aa]="--workload mlp --mode train --batch 16"
  B[mlp_aa]="${A[mlp_aa]}"
  A[host_aa]="--workload mlp --mode train --batch 16 $host --extra-cost-us 400"
  B[host_aa]="${A[host_aa]}"
  A[host_plus10]="${A[host_aa]}"
  B[host_plus10]="--workload mlp --mode train --batch 16 $host --extra-cost-us 440"
else
  all="gpu_aa gpu_plus3 host_aa host_plus10"
  A[gpu_aa]="--workload matmul --matmul-size 8192 --precision fp16"
  B[gpu_aa]="${A[gpu_aa]}"
  A[gpu_plus3]="${A[gpu_aa]}"
  B[gpu_plus3]="${A[gpu_aa]}"
  K[gpu_plus3]=8448
  A[gpu_square3]="${A[gpu_aa]}"
  B[gpu_square3]="--workload matmul --matmul-size 8272 --precision fp16"
  A[host_aa]="--workload mlp --mode train --batch 16 --execution eager"
  B[host_aa]="${A[host_aa]}"
  A[host_plus10]="--workload mlp --mode train --batch 16 $host --extra-cost-us 400"
  B[host_plus10]="--workload mlp --mode train --batch 16 $host --extra-cost-us 440"
fi
cases=${cases:-$all}
cases=${cases//,/ }

data=$(mktemp -d)
trap 'kill $(cat "$data/pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$data"' EXIT
"$bin/gpubenchd" --data-dir "$data" --listen 127.0.0.1:0 --port-file "$data/port" \
  2>"$data/log" & echo $! >"$data/pid"
for _ in $(seq 100); do [ -s "$data/port" ] && break; sleep 0.1; done
[ -s "$data/port" ] || { cat "$data/log" >&2; exit 1; }
addr="127.0.0.1:$(cat "$data/port")"
echo "# $(date -u +%FT%TZ) $(hostname) device=$device pairs=$pairs repeat=$repeat"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/# gpu: /' || true

summary=""
for c in $cases; do
  [ -n "${A[$c]:-}" ] || { echo "verdict_calibration: no case $c for $device" >&2; exit 2; }
  # Spec files from the flags (the same flags give the same spec).
  "$bin/gpubench" spec ${A[$c]} --device "$device" $measure 2>/dev/null | sed -n "1,/^}$/p" >"$data/$c-A.json"
  "$bin/gpubench" spec ${B[$c]} --device "$device" $measure 2>/dev/null | sed -n "1,/^}$/p" >"$data/$c-B.json"
  if [ -n "${K[$c]:-}" ]; then  # no flag sets K alone
    python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); s["base"]["params"]["matmul_k"] = sys.argv[2]
json.dump(s, open(sys.argv[1], "w"), indent=1)' "$data/$c-B.json" "${K[$c]}"
  fi
  start=$(date +%s)
  faster=0 slower=0 same=0 noisy=0 other=0 ratios=""
  for p in $(seq "$pairs"); do
    "$bin/gpubench" compare "$data/$c-A.json" "$data/$c-B.json" --repeat "$repeat" \
      --host "$addr" --output csv >"$data/out" 2>"$data/err" || true
    row=$(python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) < 2: print("error||"); sys.exit()
r = dict(zip(rows[0], rows[1]))
print(r["verdict"] + "|" + r["speedup"] + "|" + r["noise"])' "$data/out")
    verdict=${row%%|*} rest=${row#*|}
    ratio=${rest%%|*} noise=${rest#*|}
    echo "$c pair $p: speedup $ratio noise $noise: $verdict $(date -u +%T)"
    [ "$verdict" = error ] && { cat "$data/err" >&2; }
    case $verdict in
      faster*) faster=$((faster + 1)) ;;
      slower*) slower=$((slower + 1)) ;;
      "no significant difference"*) same=$((same + 1)) ;;
      "too noisy"*) noisy=$((noisy + 1)) ;;
      *) other=$((other + 1)) ;;
    esac
    ratios="$ratios $ratio"
  done
  median=$(python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:] if x not in ("-","")]; print("%.4f" % statistics.median(v) if v else "-")' $ratios)
  summary="$summary$(printf '%-12s %5d %6d %6d %8d %9d %5d %9s %7ds' "$c" "$pairs" "$faster" \
    "$slower" "$same" "$noisy" "$other" "$median" $(( $(date +%s) - start )))\n"
done
if [ -n "$runs_out" ]; then
  "$bin/gpubench" runs --host "$addr" --limit 100000 --output json >"$runs_out"
fi
echo
echo "speedup = baseline time per sample / candidate's (< 1: B slower); runs a side: $repeat"
printf '%-12s %5s %6s %6s %8s %9s %5s %9s %8s\n' case pairs faster slower no-diff too-noisy other speedup time
printf "$summary"
