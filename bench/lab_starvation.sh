#!/bin/bash
# Lab 1, GPU starvation by the data loader, played through the CLI as the
# docs/labs.md tells a user: ResNet-18 training on 256 px images that the host
# pipeline makes as a DataLoader over JPEG files does (decode, random resized
# crop, flip, normalise; no --extra-cost-us), with loader threads 0 against
# 1, 2, 4 and 8, pinned memory and non-blocking copies. Writes the runs table
# (samples/s, and wait%: the share of each step spent waiting for its batch),
# the CSV and the HTML report (throughput and data wait against loader
# threads) to $OUT. On a GPU it checks the starvation: over half of each step
# waiting at 0 threads, under a tenth at 8.
# Usage, in the checkout root after deploy/build.sh (BUILD=build) or
# deploy/build.sh --bundle DIR (the default, build-bundle):
#   OUT=/tmp/lab1 bash bench/lab_starvation.sh          # a GPU host: full size
#   SMALL=1 BUILD=build bash bench/lab_starvation.sh    # a CPU: 64 px, batch 8, 0 and 2 threads
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, submit_job, expect
start_daemon "${PORT:-50091}" || exit 1
if [ "$SMALL" = 1 ]; then
  size=(--image-size 64 --batch 8 --loader-threads 0,2 --min-time-ms 500 --max-time-ms 1500)
else
  size=(--image-size 256 --batch 64 --loader-threads 0,1,2,4,8 --min-time-ms 3000
        --max-time-ms 8000)
fi
submit_job starvation --workload resnet18 --mode train --device "${DEVICE:-auto}" \
  --input host --pinned --non-blocking --cudnn-benchmark "${size[@]}" \
  --name "lab 1: starvation by the data loader"
"$B/gpubench" report "$JOB" -o "$OUT/report.html"
"$B/gpubench" hosts > "$OUT/host.txt" 2>&1
expect "$OUT/report.html" "Throughput vs loader threads" "Data-wait share vs loader threads"
if [ "$GPU" = 1 ] && [ "$SMALL" = 0 ]; then
  python3 - "$OUT/starvation.csv" << 'PY' || FAILED=$((FAILED + 1))
import csv, sys
wait = {int(r["config"].split("host/")[1].split("L")[0]): float(r["data_wait_share"])
        for r in csv.DictReader(open(sys.argv[1]))}
print(f"data wait: {100 * wait[0]:.1f}% at 0 loader threads, {100 * wait[8]:.1f}% at 8")
sys.exit(0 if wait[0] > 0.5 and wait[8] < 0.1 else "no starvation at 0 threads, or some at 8")
PY
fi
# Full size only: a few small steps on batch 8 are too noisy to fall surely.
[ "$SMALL" = 1 ] || losses_fall "$OUT/starvation.csv"
finish_lab
