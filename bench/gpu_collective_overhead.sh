#!/bin/bash
# Where a small collective's time goes in gpubench's loop (one rank, 8 B, so
# the operation itself is nearly free): the same all-reduce with the default
# 10-iteration windows, with 100-iteration windows, and with telemetry off,
# beside Python's torch.distributed loop (bench/reference/distributed.py).
# Usage, in the checkout root of a GPU host after deploy/build.sh --bundle DIR
# -DCMAKE_BUILD_TYPE=Release:  OUT=/tmp/ovh bash bench/gpu_collective_overhead.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50088}" || exit 1
spec() {  # window_iterations telemetry_disabled
  cat <<JSON
{"base": {"workload": "collective", "device": "cuda", "worldSize": 1,
          "params": {"collectiveOp": "COLLECTIVE_OP_ALL_REDUCE", "collectiveBytes": "8"}},
 "measurement": {"warmupIterations": 50, "minTimeMs": "1000", "maxTimeMs": "2000",
                 "windowIterations": $1},
 "telemetry": {"disabled": $2}}
JSON
}
printf '%-34s %10s %10s\n' case "us/op" "device p50 us"
for v in "10 false" "100 false" "100 true"; do
  set -- $v
  spec "$1" "$2" > "$OUT/spec.json"
  id=$("$B/gpubench" submit "$OUT/spec.json" 2>> "$OUT/submit.err")
  "$B/gpubench" watch "$id" > /dev/null 2>&1
  "$B/gpubench" show "$id" --output json > "$OUT/$1-$2.json"
  python3 - "$OUT/$1-$2.json" "window $1, telemetry off=$2" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]["result"]
print("%-34s %10.2f %10.2f" % (sys.argv[2], 1e6 / run["throughput_samples_per_s"],
                                run["latency"]["p50_ms"] * 1e3))
PY
done
python3 bench/reference/distributed.py collective --ranks 1 --ops all_reduce \
  --min-bytes 8 --max-bytes 8 --iters 1000 --warmup 50 | tail -1 |
  awk -F, '{printf "%-34s %10.2f %10s\n", "python, 1000 back to back", $4, "-"}'
