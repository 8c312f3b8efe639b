#!/bin/bash
# Where gpubench's and Python's language-model steps spend their device time
# (issue 32's gaps): gpt 124m training (b16, bf16) and CUDA-graph decoding
# (b1, 512-token prompt), each profiled through gpubench (--profile) and
# through the twin (bench/reference/lm.py --profile), their kernels side by
# side (bench/kernel_table.py); then decoding under each attention kernel.
# Usage on a GPU host after deploy/build.sh --bundle: OUT=/tmp/p bash bench/gpu_lm_profile.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50092}" || exit 1
G="--workload gpt --precision bf16 --device cuda --warmup 3 --min-time-ms 1500 --max-time-ms 5000"

prof() {  # tag, then submit's arguments
  local tag=$1 job run
  shift
  job=$("$B/gpubench" submit $G "$@" 2>> "$OUT/err")
  "$B/gpubench" watch "$job" > "$OUT/$tag.txt" 2>> "$OUT/err"
  run=$("$B/gpubench" show "$job" --output json |
        python3 -c "import json,sys; print(json.load(sys.stdin)['runs'][0]['run_id'])")
  "$B/gpubench" trace "$run" -o "$OUT/$tag.trace.json" >> "$OUT/err" 2>&1
}

prof g_train --mode train --batch 16 --optimizer adamw --learning-rate 3e-4 --profile \
  --profile-iterations 5
timeout 200 python3 bench/reference/lm.py --case train --model gpt --size 124m --batch 16 \
  --seq 1024 --precision bf16 --min-time 1 --max-time 4 --profile "$OUT/p_train.trace.json" \
  > "$OUT/p_train.json" 2>> "$OUT/err"
G="${G/gpt/llama}" prof gl_train --mode train --batch 4 --optimizer adamw --learning-rate 3e-4 \
  --profile --profile-iterations 5
timeout 200 python3 bench/reference/lm.py --case train --model llama --size 1b --batch 4 \
  --seq 1024 --precision bf16 --min-time 1 --max-time 4 --profile "$OUT/pl_train.trace.json" \
  > "$OUT/pl_train.json" 2>> "$OUT/err"
[ "${TRAIN_ONLY:-0}" = 1 ] || {
prof g_graph --mode infer --batch 1 --execution cuda_graph --profile --profile-iterations 1
timeout 200 python3 bench/reference/lm.py --case decode --model gpt --size 124m --batch 1 \
  --prompt 512 --new-tokens 128 --compile --min-time 1 --max-time 4 \
  --profile "$OUT/p_graph.trace.json" > "$OUT/p_graph.json" 2>> "$OUT/err"
for a in flash efficient math cudnn; do
  prof "eager_$a" --mode infer --batch 1 --attention "$a"
  prof "graph_$a" --mode infer --batch 1 --execution cuda_graph --attention "$a"
done
}
{
  for t in g_train p_train gl_train pl_train; do
    echo "== $t (per training step)"
    python3 bench/kernel_table.py "$OUT/$t.trace.json" 5 14
  done
  for t in g_graph p_graph; do
    [ -e "$OUT/$t.trace.json" ] || continue
    echo "== $t (per decoded token)"
    python3 bench/kernel_table.py "$OUT/$t.trace.json" 127 14
  done
  echo "== decode b1 by attention kernel: tokens/s MFU peak TTFT ITL50 ITL99 GB/s kernel"
  for f in "$OUT"/eager_*.txt "$OUT"/graph_*.txt; do
    [ -e "$f" ] || continue
    echo "$(basename "$f" .txt): $(grep -A1 '^#  tokens' "$f" | tail -1)"
  done
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
