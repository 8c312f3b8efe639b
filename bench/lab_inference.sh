#!/bin/bash
# Lab 5, ResNet-50 inference, played through the CLI as docs/labs.md tells a
# user: batch 32 in fp32 against AMP (fp16) and channels_last, with p50, p95
# and p99 latency; fp32 eager against fp16 channels_last compiled
# (AOTInductor, as torch.compile), 5 runs a side by `gpubench compare
# --repeat 5`, for a verdict; a batch sweep of the best
# eager config (throughput and latency against the batch); a short training
# run (its loss falls); and the results as CSV, JSON and Markdown. Writes
# every output and the HTML report to $OUT.
# Usage, in the checkout root after deploy/build.sh (BUILD=build) or
# deploy/build.sh --bundle DIR (the default, build-bundle):
#   OUT=/tmp/lab5 bash bench/lab_inference.sh          # a GPU host (compiling takes ~2 min)
#   SMALL=1 BUILD=build bash bench/lab_inference.sh    # a CPU: 64 px, bf16, nothing compiled
# COMPILED=0 leaves out the compiled run (it needs the PyTorch wheel's Python
# on the daemon's host; the SMALL default).
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, submit_job, run_ids, expect
start_daemon "${PORT:-50095}" || exit 1
if [ "$GPU" = 1 ] && [ "$SMALL" = 0 ]; then
  device=cuda half=fp16 batches=1,8,32,128,256
  size=(--image-size 224)
  time=(--min-time-ms 1000 --max-time-ms 4000)
  COMPILED=${COMPILED:-1}
else  # the CPU's autocast is bf16
  device=cpu half=bf16 batches=1,4,16
  size=(--image-size 64)
  time=(--min-time-ms 300 --max-time-ms 1500)
  COMPILED=${COMPILED:-0}
fi
common=(--workload resnet50 --device "$device" "${size[@]}" "${time[@]}")
submit_job optimised "${common[@]}" --mode infer --batch 32 --precision "fp32,$half" \
  --channels-last off,on --name "lab 5: fp32 against AMP and channels_last"
optimised=$JOB
jobs=("$JOB")
if [ "$COMPILED" = 1 ]; then
  # fp32 eager against the half-precision channels_last model compiled, each
  # measured 5 times in fresh workers, alternating: a verdict, not a guess.
  # The first compiled run compiles; the others load the cached package.
  "$B/gpubench" spec "${common[@]}" --mode infer --batch 32 --output json > "$OUT/fp32.json"
  "$B/gpubench" spec "${common[@]}" --mode infer --batch 32 --precision "$half" \
    --channels-last --execution aot --output json > "$OUT/compiled.json"
  "$B/gpubench" compare "$OUT/fp32.json" "$OUT/compiled.json" --repeat 5 \
    > "$OUT/compare.txt" 2> "$OUT/compare.progress"
  cat "$OUT/compare.txt"
  expect "$OUT/compare.txt" "verdict"
fi
submit_job batches "${common[@]}" --mode infer --batch "$batches" --precision "$half" \
  --channels-last --name "lab 5: batch sweep"
jobs+=("$JOB")
submit_job training "${common[@]}" --mode train --batch 32 --precision "$half" --channels-last \
  --name "lab 5: micro-training"
jobs+=("$JOB")
for format in csv json markdown; do
  "$B/gpubench" show "$optimised" --output "$format" > "$OUT/optimised.$format"
done
python3 -c 'import json, sys; assert len(json.load(open(sys.argv[1]))["runs"]) == 4' \
  "$OUT/optimised.json" || FAILED=$((FAILED + 1))
"$B/gpubench" report "${jobs[@]}" -o "$OUT/report.html"
expect "$OUT/optimised.markdown" "| p50 ms |" "| p95 ms |"
expect "$OUT/report.html" "Optimised vs baseline" "Throughput vs batch size" \
  "Latency (p50, p95) vs batch size"
# Full size only: a few small steps on batch 8 are too noisy to fall surely.
[ "$SMALL" = 1 ] || losses_fall "$OUT/training.csv"
finish_lab
