#!/bin/bash
# Lab 4, mixed precision and a fed GPU, played through the CLI as docs/labs.md
# tells a user: ResNet-18 training on 224 px JPEGs from 8 loader threads with
# prefetching, pinned memory and non-blocking copies, in fp32 against AMP
# (fp16 autocast with dynamic loss scaling, as torch.amp's GradScaler),
# cudnn.benchmark off against on; GPU utilisation from the telemetry beside
# each run. Writes the table, CSV and HTML report to $OUT.
# Usage, in the checkout root after deploy/build.sh (BUILD=build) or
# deploy/build.sh --bundle DIR (the default, build-bundle):
#   OUT=/tmp/lab4 bash bench/lab_mixed_precision.sh          # a GPU host
#   SMALL=1 BUILD=build bash bench/lab_mixed_precision.sh    # a CPU: bf16 autocast, 64 px
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, submit_job, expect
start_daemon "${PORT:-50094}" || exit 1
if [ "$GPU" = 1 ] && [ "$SMALL" = 0 ]; then
  run=(--device cuda --precision fp32,fp16 --cudnn-benchmark off,on --image-size 224 --batch 128
       --loader-threads 8 --min-time-ms 2000 --max-time-ms 8000)
else  # fp16 is the GPU's; the CPU's autocast is bf16, and cuDNN means nothing there
  run=(--device cpu --precision fp32,bf16 --image-size 64 --batch 8 --loader-threads 2
       --min-time-ms 300 --max-time-ms 1500)
fi
submit_job amp --workload resnet18 --mode train "${run[@]}" --input host --prefetch-depth 4 \
  --pinned --non-blocking --name "lab 4: mixed precision, a fed GPU"
"$B/gpubench" report "$JOB" -o "$OUT/report.html"
expect "$OUT/report.html" "Optimised vs baseline"
if [ "$GPU" = 1 ] && [ "$SMALL" = 0 ]; then
  python3 - "$OUT/amp.csv" << 'PY' || FAILED=$((FAILED + 1))
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    print(f'{r["config"]}: {float(r["throughput_samples_per_s"]):.1f} samples/s, '
          f'GPU {r["gpu_utilization_pct"] or "-"}% busy, {r["power_w"] or "-"} W')
sys.exit(0 if len(rows) == 4 and all(r["gpu_utilization_pct"] for r in rows)
         else "a run without its GPU utilisation")
PY
fi
# Full size only: a few small steps on batch 8 are too noisy to fall surely.
[ "$SMALL" = 1 ] || losses_fall "$OUT/amp.csv"
finish_lab
