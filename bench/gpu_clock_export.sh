#!/bin/bash
# Issue 33 on a GPU host, read-only: the PCI bus id the daemon's host probe
# gives each GPU (how clock control finds it in NVML) beside nvidia-smi's;
# a spec asking for a power limit refused by a daemon without
# --allow-clock-control, the card's limit and clocks unchanged before and
# after (nvidia-smi); and `gpubench export`'s JSON Lines row of a CUDA run
# with its flattened fingerprint. Nothing of the card's settings is changed:
# the lent machines' rules forbid it, so no run here sets a limit or a lock.
# Usage on a GPU host after deploy/build.sh --bundle: OUT=/tmp/clock bash bench/gpu_clock_export.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, submit_job
start_daemon "${PORT:-50096}" || exit 1
query=index,pci.bus_id,power.limit,clocks.sm,clocks.applications.graphics
nvidia-smi --query-gpu=$query --format=csv,noheader > "$OUT/before.csv"
"$B/gpubench" hosts --output json > "$OUT/hosts.json"
"$B/gpubench" submit --workload matmul --matmul-size 4096 --precision bf16 --device cuda:0 \
  --power-limit 500 > "$OUT/refused.txt" 2>&1
echo "exit $?" >> "$OUT/refused.txt"
submit_job matmul --workload matmul --matmul-size 4096 --precision bf16 --device cuda:0 \
  --warmup 3 --min-time-ms 300 --max-time-ms 2000 > /dev/null
"$B/gpubench" export > "$OUT/runs.jsonl" 2> "$OUT/export.err"
nvidia-smi --query-gpu=$query --format=csv,noheader > "$OUT/after.csv"
{
  echo "== PCI bus ids: gpubench hosts, then nvidia-smi"
  python3 -c "
import json
for g in json.load(open('$OUT/hosts.json'))[0]['host']['gpus']:
    print(g.get('index', 0), g.get('pciBusId', g.get('pci_bus_id', '-')), g.get('name'))"
  cut -d, -f1,2 "$OUT/before.csv"
  echo "== a power limit asked of a daemon without --allow-clock-control"
  cat "$OUT/refused.txt"
  echo "== nvidia-smi before and after (index, bus, power limit, SM clock, app clock)"
  cat "$OUT/before.csv" "$OUT/after.csv"
  echo "== export: $(cat "$OUT/export.err")"
  python3 -c "
import json
row = json.loads(open('$OUT/runs.jsonl').readline())
for k in ['host_id', 'config', 'device', 'state', 'throughput_samples_per_s', 'peak_allocated_bytes',
          'power_w', 'samples_per_joule', 'fp_gpu_name', 'fp_driver_version', 'fp_power_limit_w',
          'fp_locked_gpu_clock_mhz', 'fp_pcie_max_width', 'fp_ecc_enabled']:
    print(f'{k:28} {row.get(k)}')
print(len(row), 'columns')"
} | tee "$OUT/summary.txt"
