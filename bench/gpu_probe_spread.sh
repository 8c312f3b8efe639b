#!/bin/bash
# How much the fleet probe suite's figures vary between sessions on one GPU
# (issue 33: is a 5% straggler threshold above the noise?): N sessions of
# gpubench probe (default 6) on one daemon, then gpubench fleet, whose JSON
# has each probe's latest figure and its earlier ones. Prints per probe the
# sessions' mean, spread ((max - min) / median) and coefficient of
# variation, and whether fleet flagged the GPU against its own history.
# Usage on a GPU host after deploy/build.sh --bundle:
#   OUT=/tmp/spread SESSIONS=6 bash bench/gpu_probe_spread.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50096}" || exit 1
for s in $(seq "${SESSIONS:-6}"); do
  "$B/gpubench" probe > "$OUT/probe$s.txt" 2> "$OUT/probe$s.err" || echo "probe $s: exit $?"
done
"$B/gpubench" fleet --output json > "$OUT/fleet.json" 2> "$OUT/fleet.err"
echo "fleet exit $? ($(tail -1 "$OUT/fleet.err"))"
"$B/gpubench" fleet 2>&1 | cut -c1-12,110-
python3 - "$OUT/fleet.json" << 'PY'
import json, statistics, sys
doc = json.load(open(sys.argv[1]))
print(f"{'probe':14} {'sessions':>8} {'mean':>9} {'spread':>7} {'cv':>6}  drift flagged noisy")
for g in doc["gpus"]:
    v = g["history"] + [g["value"]]
    mean, med = statistics.mean(v), statistics.median(v)
    cv = statistics.stdev(v) / mean if len(v) > 1 else 0
    print(f"{g['probe']:14} {len(v):8d} {mean:9.4g} {100 * (max(v) - min(v)) / med:6.2f}% "
          f"{100 * cv:5.2f}%  {g.get('drift', float('nan')):.3f} {g['drifted']} "
          f"{g['drift_too_noisy']}")
PY
