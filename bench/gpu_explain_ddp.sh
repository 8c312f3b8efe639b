#!/bin/bash
# Issue 48 on two GPUs: `gpubench explain` and `compare --explain` on the
# ranks of a ddp run. resnet50 training, batch 64 a rank, channels_last, 2
# ranks, gradients all-reduced in 25 MiB buckets during backward: bf16 (A)
# against fp32 (B). Each side: one profiled job (explain of every rank; each
# rank's trace kept for HTA, tests/report/hta_agreement.py), then `compare A
# B --repeat 5 --explain` (the last repetition of each side profiled).
# Outputs under $OUT: NAME.explain.txt, NAME.rankR.trace.json, report.html
# (both jobs), ddp.compare.txt, and summary.txt last (COMPARE=0: no
# compare, no summary).
# Usage on a 2-GPU host after deploy/build.sh --bundle:
#   OUT=/tmp/e bash bench/gpu_explain_ddp.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, explained_job
start_daemon "${PORT:-50095}" || exit 1
# cuDNN's first steps (its search) take seconds: room for them and a window.
DDP="--workload ddp --ddp-model resnet50 --mode train --device cuda --world-size 2 --batch 64
  --channels-last true --cudnn-benchmark true --warmup 10 --min-time-ms 2000
  --max-time-ms 40000 --profile --profile-iterations 2"

explained_job ddp_bf16 2 $DDP --precision bf16
a=$JOB
explained_job ddp_fp32 2 $DDP --precision fp32
# Both jobs in the report: each run's breakdown from its rank 0 trace.
"$B/gpubench" report "$a" "$JOB" -o "$OUT/report.html" >> "$OUT/err" 2>&1
[ "${COMPARE:-1}" = 1 ] || exit 0
"$B/gpubench" compare "$a" "$JOB" --repeat "${REPEAT:-5}" --explain \
  > "$OUT/ddp.compare.txt" 2>> "$OUT/err"
echo "compare exit $?" >> "$OUT/ddp.compare.txt"
{
  for f in "$OUT"/*.explain.txt; do
    echo "== $(basename "$f" .explain.txt)"
    sed -n '/^ranks (/,$p' "$f"
  done
  echo "== compare"
  sed -n '2p;/^why/,/^  biggest/p;/^ranks, us/,/^B: /p' "$OUT/ddp.compare.txt"
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
