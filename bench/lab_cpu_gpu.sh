#!/bin/bash
# Lab 2, CPU against GPU training time, played through the CLI as docs/labs.md
# tells a user: the large MLP trained on the CPU and the GPU at batch 16 to 1024
# (time and peak memory against the batch, and the GPU's speedup with its
# interval), the MLP's three sizes (time and memory against the parameter
# count), and a small CNN fed by 0 to 8 loader threads. Writes each job's
# table and CSV, and one HTML report of the three jobs, to $OUT.
# Usage, in the checkout root after deploy/build.sh (BUILD=build) or
# deploy/build.sh --bundle DIR (the default, build-bundle):
#   OUT=/tmp/lab2 bash bench/lab_cpu_gpu.sh          # a GPU host: CPU and GPU side by side
#   SMALL=1 BUILD=build bash bench/lab_cpu_gpu.sh    # a CPU only: shorter runs
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, submit_job, expect
start_daemon "${PORT:-50092}" || exit 1
devices=cpu
[ "$GPU" = 1 ] && devices=cpu,cuda
if [ "$SMALL" = 1 ]; then
  time=(--min-time-ms 300 --max-time-ms 1000)
  threads=0,2
else
  time=(--min-time-ms 1000 --max-time-ms 4000)
  threads=0,2,4,8
fi
submit_job batch --workload mlp --model-size large --mode train --device "$devices" \
  --batch 16,64,256,1024 \
  "${time[@]}" --name "lab 2: batch size"
batch=$JOB
submit_job size --workload mlp --mode train --device "$devices" --model-size small,medium,large \
  --batch 256 "${time[@]}" --name "lab 2: model size"
size=$JOB
submit_job loaders --workload simple_cnn --mode train --device "${devices##*,}" --input host \
  --pinned --loader-threads "$threads" --batch 64 "${time[@]}" --name "lab 2: loader threads"
"$B/gpubench" report "$batch" "$size" "$JOB" -o "$OUT/report.html"
# Peak memory is the tensors' own on either device (the CPU's from the
# worker's counting allocator).
expect "$OUT/report.html" "Throughput vs batch size" "Peak memory allocated vs batch size" \
  "Throughput vs model size (millions of parameters)" "Throughput vs loader threads"
if [ "$GPU" = 1 ]; then
  expect "$OUT/report.html" "Speedup by device"
  expect "$OUT/batch.txt" "speedup by device"
fi
finish_lab
