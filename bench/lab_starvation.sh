#!/bin/bash
# Lab 1, GPU starvation by the data loader, played through the CLI as the
# README tells a user: ResNet-18 training on 256 px images that the host
# pipeline makes as a DataLoader over JPEG files does (decode, random resized
# crop, flip, normalise; no --extra-cost-us), with loader threads 0 against
# 1, 2, 4 and 8, pinned memory and non-blocking copies. Prints the runs table
# (samples/s, and wait%: the share of each step spent waiting for its batch)
# and the same as CSV.
# Usage, in the checkout root after deploy/build.sh (BUILD=build) or
# deploy/build.sh --bundle DIR (the default, build-bundle):
#   OUT=/tmp/lab1 bash bench/lab_starvation.sh          # a GPU host: full size
#   SMALL=1 BUILD=build bash bench/lab_starvation.sh    # a CPU: 64 px, batch 8, 0 and 2 threads
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50091}" || exit 1
if [ "${SMALL:-0}" = 1 ]; then
  size=(--image-size 64 --batch 8 --loader-threads 0,2 --min-time-ms 1000 --max-time-ms 4000)
else
  size=(--image-size 256 --batch 64 --loader-threads 0,1,2,4,8 --min-time-ms 4000
        --max-time-ms 15000)
fi
"$B/gpubench" submit --wait --workload resnet18 --mode train --device "${DEVICE:-auto}" \
  --input host --pinned --non-blocking --cudnn-benchmark "${size[@]}" \
  --name "lab 1: starvation by the data loader" > "$OUT/table.txt" 2> "$OUT/progress.txt"
code=$?
job=$("$B/gpubench" jobs --limit 1 --output json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["job_id"])')
"$B/gpubench" show "$job" --output csv > "$OUT/runs.csv"
"$B/gpubench" hosts > "$OUT/host.txt" 2>&1
cat "$OUT/table.txt"
echo "exit code $code; CSV in $OUT/runs.csv"
exit $code
