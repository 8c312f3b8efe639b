#!/bin/bash
# Issue 29's mid-size gap (1 to 32 MiB, where gpubench's collectives took up
# to 22 us an operation more than Python's): the same sizes, one after the
# other, on RANKS GPUs (default 2), fp32, all_gather and all_reduce:
#   python      bench/reference/distributed.py (nccl-tests' method)
#   default     gpubench as shipped (ranks confined, telemetry every 100 ms)
#   no-telem    gpubench with the spec's telemetry off
#   telem-1s    gpubench with telemetry every 1000 ms
#   open        gpubench with --confine-workers=false
# then, per size, us per operation of each, and for gpubench the device time
# per operation (p50 and mean of the bursts) and the host's longest iteration.
# Usage, in the checkout root of a multi-GPU host after deploy/build.sh --bundle DIR
#   -DCMAKE_BUILD_TYPE=Release:  OUT=/tmp/mid bash bench/gpu_collective_midsize.sh [CASE...]
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
cases=${*:-python default no-telem telem-1s open}
RANKS=${RANKS:-2}
MIN=${MIN_BYTES:-1048576}
MAX=${MAX_BYTES:-33554432}
OPS=${OPS:-all_gather,all_reduce}
short="--warmup 5 --min-time-ms 300 --max-time-ms 2000"

for c in $cases; do
  echo "== $c"
  if [ "$c" = python ]; then
    python3 bench/reference/distributed.py collective --ranks "$RANKS" --ops "$OPS" \
      --min-bytes "$MIN" --max-bytes "$MAX" --dtype fp32 --iters 50 --warmup 5 \
      2> "$OUT/python.err" > "$OUT/python.csv"
    continue
  fi
  case $c in
  no-telem) echo '{"telemetry": {"disabled": true}}' ;;
  telem-1s) echo '{"telemetry": {"intervalMs": 1000}}' ;;
  *) echo '{}' ;;
  esac > "$OUT/$c.spec.json"
  DAEMON_ARGS=$([ "$c" = open ] && echo --confine-workers=false) DATA=$OUT/data-$c \
    start_daemon $((50110 + ${#c})) || exit 1
  id=$("$B/gpubench" submit "$OUT/$c.spec.json" --workload collective --device cuda \
       --world-size "$RANKS" --collective-op "$OPS" --collective-bytes "$MIN:$MAX" \
       --precision fp32 $short 2> "$OUT/$c.err")
  "$B/gpubench" watch "$id" > "$OUT/$c.txt" 2>&1
  "$B/gpubench" show "$id" --output json > "$OUT/$c.json" 2>> "$OUT/$c.err"
  kill -TERM "$daemon"; wait "$daemon" 2>/dev/null; trap - EXIT
done

echo "== us per operation (gpubench: wall, then device p50/mean per op and the longest host iteration in ms)"
python3 - "$OUT" $cases <<'PY'
import json, sys
out, cases = sys.argv[1], sys.argv[2:]
def python():
    try:
        return {(f[0], int(f[1])): f"{float(f[3]):8.2f}" for f in
                (l.strip().split(",") for l in open(f"{out}/python.csv")) if f[1].isdigit()}
    except OSError:
        return {}
def gpubench(name):
    try:
        d = json.load(open(f"{out}/{name}.json"))
    except (OSError, ValueError):
        return {}
    r = {}
    for run in d.get("runs", []):
        p = run.get("config", {}).get("params", {})
        op = p.get("collective_op", "").replace("COLLECTIVE_OP_", "").lower()
        res = run.get("result", {})
        ops = res.get("throughput_samples_per_s", 0)
        lat, host = res.get("latency", {}), res.get("host_latency", {})
        r[op, int(p.get("collective_bytes", 0))] = (
            f"{1e6 / ops if ops else 0:8.2f} {lat.get('p50_ms', 0) * 1e3:6.1f}/"
            f"{lat.get('mean_ms', 0) * 1e3:<6.1f} {host.get('max_ms', 0):5.1f}")
    return r
cols = {c: python() if c == "python" else gpubench(c) for c in cases}
keys = sorted(set().union(*cols.values()))
print(f"{'op':11} {'bytes':>9} " +
      " ".join(f"{c:>8}" if c == "python" else f"{c:>28}" for c in cases))
for key in keys:
    print(f"{key[0]:11} {key[1]:9} " +
          " ".join(f"{cols[c].get(key, '-'):>8}" if c == "python" else f"{cols[c].get(key, '-'):>28}"
                   for c in cases))
PY
