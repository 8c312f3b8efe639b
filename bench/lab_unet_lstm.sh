#!/bin/bash
# Lab 3, U-Net and a bidirectional LSTM on the CPU and the GPU, played through
# the CLI as docs/labs.md tells a user: U-Net (31M parameters) trained on 128 px
# images at batch 16, and a 2-layer bidirectional LSTM at batch 64, each on
# both devices with a profiled window: the GPU's speedup with its interval,
# self time per sample by operator category on each device, the top
# operators, and each run's Chrome trace (open it in ui.perfetto.dev or
# chrome://tracing). Writes the tables, CSVs, traces and the HTML report to
# $OUT.
# Usage, in the checkout root after deploy/build.sh (BUILD=build) or
# deploy/build.sh --bundle DIR (the default, build-bundle):
#   OUT=/tmp/lab3 bash bench/lab_unet_lstm.sh          # a GPU host: CPU and GPU side by side
#   SMALL=1 BUILD=build bash bench/lab_unet_lstm.sh    # a CPU only: 32 px, short sequences
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, submit_job, run_ids, expect
start_daemon "${PORT:-50093}" || exit 1
devices=cpu
[ "$GPU" = 1 ] && devices=cpu,cuda
if [ "$SMALL" = 1 ]; then
  unet=(--image-size 32 --batch 2)
  lstm=(--seq-len 32 --batch 8)
  # max 10 s: under a busy CI a 32 px U-Net step has taken 1.4 s, and the
  # profiled window must still fit after the measured one.
  time=(--min-time-ms 300 --max-time-ms 10000 --profile-iterations 2)
else
  unet=(--image-size 128 --batch 16)
  lstm=(--batch 64)
  time=(--min-time-ms 2000 --max-time-ms 10000 --profile-iterations 5)
fi
submit_job unet --workload unet --mode train --device "$devices" "${unet[@]}" "${time[@]}" \
  --profile --name "lab 3: U-Net"
unet_job=$JOB
submit_job bilstm --workload bilstm --mode train --device "$devices" "${lstm[@]}" "${time[@]}" \
  --profile --name "lab 3: bidirectional LSTM"
"$B/gpubench" report "$unet_job" "$JOB" -o "$OUT/report.html"
for tag in unet bilstm; do
  for device in ${devices//,/ }; do
    for run in $(run_ids "$OUT/$tag.csv" "$device"); do
      "$B/gpubench" trace "$run" -o "$OUT/$tag-$device.trace.json" ||
        { echo "no trace of $tag on $device" >&2; FAILED=$((FAILED + 1)); }
      python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["traceEvents"]' \
        "$OUT/$tag-$device.trace.json" || FAILED=$((FAILED + 1))
    done
  done
done
expect "$OUT/report.html" "Top operators"
expect "$OUT/unet.txt" "profile (" "by category: "
expect "$OUT/bilstm.txt" "profile (" "by category: "
if [ "$GPU" = 1 ]; then
  expect "$OUT/report.html" "Speedup by device" "self time per sample by operator category"
  expect "$OUT/unet.txt" "speedup by device"
fi
ls -l "$OUT"/*.trace.json
finish_lab
