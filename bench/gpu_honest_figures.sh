#!/bin/bash
# Issue 44's GPU paths on a GPU host:
# - the bound holds with profiling: resnet50 training with --profile and
#   --max-time-ms 3000 ends within the bound plus a step, its profiled steps
#   counted, progress printed while the profiled window runs;
# - FLOPs as the kernel ran them: gpt (small custom) training in bf16, its
#   causal attention kernel named and its FLOPs a step against the registry's
#   whole-square count (a kernel that skips the masked blocks counts less);
# - the probe suite's runs are marked as the daemon's and `fleet` with one
#   host says it has too few peers, exit 0.
# Usage after deploy/build.sh --bundle: OUT=/tmp/honest bash bench/gpu_honest_figures.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, submit_job
start_daemon "${PORT:-50096}" || exit 1

# 1. --profile inside the bound, progress lines with their times.
start=$(date +%s.%N)
"$B/gpubench" submit --wait --workload resnet50 --device cuda --mode train --batch 64 \
  --precision bf16 --warmup 5 --min-iterations 20 --min-time-ms 1000 --max-time-ms 3000 \
  --profile > "$OUT/profiled.txt" 2> >(while IFS= read -r line; do
    awk -v t="$(date +%s.%N)" -v s="$start" -v l="$line" 'BEGIN { printf "%6.2f %s\n", t - s, l }'
  done > "$OUT/profiled.progress")
code=$?
end=$(date +%s.%N)
JOB=$(awk 'NR == 1 && $1 == "job" { print $2 }' "$OUT/profiled.txt")
"$B/gpubench" show "$JOB" --output json > "$OUT/profiled.json"

# 2. gpt training: the attention kernel and FLOPs a step.
submit_job gpt --workload gpt --model-size custom --num-layers 4 --hidden-size 512 \
  --num-heads 8 --vocab-size 8192 --seq-len 1024 --device cuda --mode train --batch 8 \
  --precision bf16 --warmup 5 --min-time-ms 1000 --max-time-ms 4000
"$B/gpubench" show "$JOB" --output json > "$OUT/gpt.json"
"$B/gpubench" spec --workload gpt --model-size custom --num-layers 4 --hidden-size 512 \
  --num-heads 8 --vocab-size 8192 --seq-len 1024 --device cuda --mode train --batch 8 \
  > "$OUT/gpt-spec.txt" 2>&1

# 3. The probe suite, then fleet over one host.
"$B/gpubench" probe > "$OUT/probe.txt" 2>&1
echo "probe: exit $?" > "$OUT/probe.code"
"$B/gpubench" fleet > "$OUT/fleet.txt" 2>&1
echo "fleet: exit $?" >> "$OUT/probe.code"
"$B/gpubench" jobs --output json > "$OUT/jobs.json" 2>&1

{
  echo "== 1. resnet50 train b64 bf16 --profile --max-time-ms 3000: exit $code, wall $(awk -v e="$end" -v s="$start" 'BEGIN { printf "%.2f", e - s }') s"
  python3 - "$OUT/profiled.json" << 'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
r = run.get("result", {})
print("  state", run.get("state"), "| iterations", r.get("iterations"), "| measured_ms",
      r.get("measured_ms"), "| profiled_iterations", r.get("profiled_iterations"),
      "| stopped_at_max_time", r.get("stopped_at_max_time", False))
print("  interval", r.get("interval_basis"), r.get("interval_samples"),
      "| profile error:", r.get("profile", {}).get("error", "-"))
PY
  echo "  progress lines (seconds since submit):"
  tail -8 "$OUT/profiled.progress" | sed 's/^/    /'
  echo "== 2. gpt custom 4x512 T1024 train b8 bf16"
  python3 - "$OUT/gpt.json" << 'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
r = run.get("result", {})
print("  attention_backend", r.get("attention_backend"), "| flops_per_iteration",
      r.get("flops_per_iteration"), "| achieved_tflops", r.get("achieved_tflops"),
      "| mfu", r.get("mfu"), "| datasheet peak", r.get("datasheet_peak_tflops"))
PY
  echo "  spec's estimate (the whole square):"
  grep -A3 "estimated" "$OUT/gpt-spec.txt" | sed 's/^/    /'
  echo "== 3. probe, fleet"
  cat "$OUT/probe.code"
  tail -6 "$OUT/fleet.txt" | sed 's/^/  /'
  python3 - "$OUT/jobs.json" << 'PY'
import json, sys
try:
    jobs = json.load(open(sys.argv[1]))
    jobs = jobs.get("jobs", jobs) if isinstance(jobs, dict) else jobs
    print("  jobs marked daemon_probe:", sum(1 for j in jobs if j.get("daemon_probe")), "of", len(jobs))
except Exception as e:
    print("  jobs: unreadable", e)
PY
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
