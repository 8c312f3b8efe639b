#!/bin/bash
# Issue 19's checks on a GPU host, each through the real daemon and CLI:
#   numerics  resnet50 train and infer in fp32, fp16 and bf16 with
#             --check-numerics (each run against fp64 on the CPU)
#   nvtx      a run under Nsight Systems (where nsys is installed) and the
#             NVTX ranges it recorded (nsys stats, nvtx_sum)
#   speedup   unet and bilstm training swept over --device cpu,cuda with a
#             profiled window: the speedup view of `gpubench show`
#   roofline  the host's peaks (matmul in four precisions, a 1 GiB
#             device-to-device copy), then resnet50 train and infer bs256 fp16
#             channels_last and mlp train b16, profiled: `show`'s roofline
# Usage, in the checkout root after deploy/build.sh --bundle DIR -DCMAKE_BUILD_TYPE=Release:
#   OUT=/tmp/an bash bench/gpu_analyses.sh [numerics] [nvtx] [speedup] [roofline]
#   (default: all four)
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50084}" || exit 1
checks=${*:-numerics nvtx speedup roofline}
short="--warmup 5 --min-time-ms 300 --max-time-ms 1000"

for check in $checks; do
  echo "== $check"
  case $check in
  numerics)
    "$B/gpubench" submit --workload resnet50 --device cuda --mode train,infer \
      --precision fp32,fp16,bf16 --channels-last true --batch 32 --check-numerics true \
      $short --wait
    ;;
  nvtx)
    nsys=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys \
           2>/dev/null | head -1)
    if [ -z "$nsys" ]; then
      echo "nsys: not installed on this host"
      continue
    fi
    "$nsys" --version
    "$nsys" profile -t cuda,nvtx -o "$OUT/nvtx" --force-overwrite true \
      "$B/gpubench" run --data-dir "$OUT/nvtx-data" --workload resnet50 --device cuda \
      --mode infer --batch 32 --precision fp16 $short > "$OUT/nvtx-run.txt" 2>&1
    tail -3 "$OUT/nvtx-run.txt"
    "$nsys" stats -q -r nvtx_sum "$OUT/nvtx.nsys-rep" 2>&1 | head -30
    ;;
  speedup)
    echo '{"profiling": {"enabled": true, "iterations": 3}}' > "$OUT/profiled.json"
    for w in "unet --batch 16" "bilstm --batch 64"; do
      "$B/gpubench" submit "$OUT/profiled.json" --workload $w --device cpu,cuda --mode train \
        --warmup 2 --min-iterations 3 --min-time-ms 1000 --max-time-ms 4000 --wait |
        sed -n '/^speedup by device/,$p'
    done
    ;;
  roofline)
    "$B/gpubench" submit --workload matmul --device cuda --matmul-size 8192 \
      --precision fp32,tf32,fp16,bf16 $short --wait | grep -E "^[0-9] "
    "$B/gpubench" submit --workload copy --device cuda --copy-direction device_to_device \
      --copy-bytes 1073741824 $short --wait | grep -E "^[0-9] "
    echo '{"profiling": {"enabled": true, "iterations": 5}}' > "$OUT/profiled.json"
    "$B/gpubench" submit "$OUT/profiled.json" --workload resnet50 --device cuda \
      --mode train,infer --batch 256 --precision fp16 --channels-last true $short --wait |
      sed -n '/^roofline/,/^$/p'
    "$B/gpubench" submit "$OUT/profiled.json" --workload mlp --device cuda --mode train \
      --batch 16 $short --wait | sed -n '/^roofline/,/^$/p'
    ;;
  esac
done
