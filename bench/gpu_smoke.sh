#!/bin/bash
# CUDA smoke run of the engine on a GPU host (issue 3): one workload in train
# and infer, fp32 and fp16 (with loss scaling), eager and CUDA graph; plus
# matmul, a pinned copy, the host pipeline and an out-of-memory sweep.
# Usage, in the checkout root of a GPU host, after .gpu/build.sh:
#   OUT=/tmp/smoke bash bench/gpu_smoke.sh
# Prints one result table per case; logs go under $OUT.
set -uo pipefail
B=${BUILD:-build-gpu}/bin
OUT=${OUT:-/tmp/gpubench-smoke}
mkdir -p "$OUT"
export GPUBENCH_DATA_DIR=$OUT/data
short="--warmup 5 --min-iterations 50 --min-time-ms 1000 --max-time-ms 8000"

case_() {
  local name=$1
  shift
  echo "== $name: gpubench run $*"
  "$B/gpubench" run $short "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"
  local rc=$?
  cat "$OUT/$name.txt"
  [ $rc -eq 0 ] || { echo "(exit $rc)"; tail -5 "$OUT/$name.err"; }
}

"$B/gpubench-worker" --probe > "$OUT/probe.txt" 2>&1 || true
case_ resnet50 --workload resnet50 --device cuda --batch 32 --mode train,infer \
  --precision fp32,fp16 --channels-last true --cudnn-benchmark true \
  --execution eager,cuda_graph
case_ mlp_graph --workload mlp --device cuda --batch 16 --mode train,infer \
  --execution eager,cuda_graph
case_ matmul --workload matmul --device cuda --matmul-size 8192 --precision bf16,fp32,tf32
case_ copy --workload copy --device cuda --copy-bytes 268435456 --pinned true,false
case_ pipeline --workload resnet18 --device cuda --batch 64 --mode train \
  --precision bf16 --channels-last true --input host --loader-threads 0,8 \
  --pinned true --image-size 128
case_ oom --workload resnet50 --device cuda --mode train --batch 256,8192,16384 \
  --max-time-ms 3000
