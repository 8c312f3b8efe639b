#!/bin/bash
# Issue 33 on a GPU host: the environment fingerprint of a CUDA run beside
# what nvidia-smi says of the same fields (read-only queries: nothing of the
# card's settings is changed), then the fleet probe suite (gpubench probe)
# twice and gpubench fleet over it (one host: no peers, so no verdict; the
# page and the JSON show what a fleet gets).
# Usage on a GPU host after deploy/build.sh --bundle: OUT=/tmp/fleet bash bench/gpu_fleet.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, submit_job
start_daemon "${PORT:-50095}" || exit 1
submit_job matmul --workload matmul --matmul-size 4096 --precision bf16 --device cuda \
  --warmup 3 --min-time-ms 300 --max-time-ms 2000
"$B/gpubench" show "$JOB" --output json | python3 -c "
import json, sys
for k, v in json.load(sys.stdin)['runs'][0].get('fingerprint', {}).items():
    print(f'{k:32} {v}')" > "$OUT/fingerprint.txt"
nvidia-smi --query-gpu=name,driver_version,vbios_version,serial,uuid,ecc.mode.current,mig.mode.current,persistence_mode,power.limit,enforced.power.limit,power.default_limit,power.min_limit,power.max_limit,clocks.applications.graphics,clocks.applications.memory,clocks.max.sm,clocks.max.memory,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max \
  --format=csv > "$OUT/nvidia-smi.csv" 2>&1
nvidia-smi nvlink --status > "$OUT/nvlink.txt" 2>&1
for session in 1 2; do
  "$B/gpubench" probe > "$OUT/probe$session.txt" 2> "$OUT/probe$session.err"
  echo "probe $session: exit $?" >> "$OUT/probe.codes"
done
"$B/gpubench" fleet --report "$OUT/fleet.html" > "$OUT/fleet.txt" 2>&1
"$B/gpubench" fleet --output json > "$OUT/fleet.json" 2>&1
{
  echo "== show's environment line"
  grep -A3 "^environment" "$OUT/matmul.txt"
  echo "== the run's fingerprint (JSON)"
  cat "$OUT/fingerprint.txt"
  echo "== nvidia-smi"
  python3 -c "
import csv
rows = list(csv.reader(open('$OUT/nvidia-smi.csv')))
for k, v in zip(rows[0], rows[1] if len(rows) > 1 else []):
    print(f'{k.strip():40} {v.strip()}')"
  echo "links up (nvidia-smi nvlink --status): $(grep -c 'GB/s' "$OUT/nvlink.txt")"
  echo "== gpubench probe (session 2)"
  cat "$OUT/probe.codes"
  cat "$OUT/probe2.txt"
  echo "== gpubench fleet"
  cat "$OUT/fleet.txt"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
