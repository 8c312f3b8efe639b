#!/bin/bash
# CUDA smoke run of the whole stack on a GPU host (issues 3, 4 and 7): a real
# gpubenchd on loopback, jobs submitted with the gpubench CLI, each run in a
# gpubench-worker. Cases: resnet50 train and infer in fp32 and fp16 (with
# loss scaling), eager and CUDA graph; mlp with and without a graph; matmul;
# pinned and pageable copies; the host pipeline at 0 and 8 loader threads; an
# out-of-memory sweep; AdamW in eager and CUDA graph; and every workload in train and infer in each
# precision with channels_last and cudnn benchmark.
# Usage, in the checkout root of a GPU host, after deploy/build.sh --bundle DIR -DCMAKE_BUILD_TYPE=Release
#   (the build the committed figures used; BUILD=build-wheel after FLAVOUR=wheel deploy/build.sh):
#   OUT=/tmp/smoke bash bench/gpu_smoke.sh
# ONLY=regex runs only the cases whose names match (e.g. ONLY=every_workload).
# Prints one result table per case; logs and the daemon's data go under $OUT.
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50077}" || exit 1
short="--warmup 5 --min-iterations 50 --min-time-ms 1000 --max-time-ms 8000"

case_() {
  local name=$1
  shift
  [[ $name =~ ${ONLY:-.} ]] || return 0
  echo "== $name: gpubench submit --wait $*"
  "$B/gpubench" submit --wait $short "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"
  local rc=$?
  cat "$OUT/$name.txt"
  [ $rc -eq 0 ] || { echo "(exit $rc)"; tail -5 "$OUT/$name.err"; }
}

"$B/gpubench" hosts > "$OUT/hosts.json" 2>&1 || true
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
case_ adamw --workload resnet18,mlp --device cuda --batch 32 --mode train \
  --optimizer adamw --precision fp16,bf16 --channels-last true \
  --execution eager,cuda_graph
case_ oom --workload resnet50 --device cuda --mode train --batch 256,8192,16384 \
  --max-time-ms 3000
short="--warmup 3 --min-iterations 10 --min-time-ms 200 --max-time-ms 2000"
case_ every_workload --workload mlp,simple_cnn,resnet18,resnet50,unet,bilstm,cnn_lstm,transformer \
  --device cuda --batch 16 --mode train,infer --precision fp32,tf32,fp16,bf16 \
  --channels-last true --cudnn-benchmark true
"$B/gpubench" jobs > "$OUT/jobs.txt" 2>&1
cat "$OUT/jobs.txt"
