#!/bin/bash
# Issue 48 on a GPU: `gpubench explain` and `compare --explain` for resnet50
# inference eager against --execution cuda_graph, and gpt 124m decoding
# eager against aot_cuda_graph. Each pair: one profiled job a side (explain
# reads its trace; the trace is kept for HTA, bench/explain_hta.py), then
# `compare A B --repeat 5 --explain` (the last repetition of each side
# profiled). Outputs under $OUT: NAME.explain.txt, NAME.trace.json,
# PAIR.compare.txt, and summary.txt last.
# Usage on a GPU host after deploy/build.sh --bundle: OUT=/tmp/e bash bench/gpu_explain.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, explained_job
start_daemon "${PORT:-50094}" || exit 1
R50="--workload resnet50 --device cuda --mode infer --batch 16 --precision bf16
  --cudnn-benchmark true --warmup 5 --min-time-ms 1000 --max-time-ms 8000 --profile
  --profile-iterations 2"
# A decode step is a whole generation (about 0.25 s eager): one profiled.
GPT="--workload gpt --device cuda --mode infer --batch 1 --precision bf16 --warmup 2
  --min-time-ms 1500 --max-time-ms 15000 --profile --profile-iterations 1"

pair() {  # pair name, A name, A flags, B name, B flags
  local a
  explained_job "$2" 1 $3
  a=$JOB
  explained_job "$4" 1 $5
  "$B/gpubench" compare "$a" "$JOB" --repeat "${REPEAT:-5}" --explain \
    > "$OUT/$1.compare.txt" 2>> "$OUT/err"
  echo "compare exit $?" >> "$OUT/$1.compare.txt"
}

pair resnet50 resnet50_eager "$R50" resnet50_graph "$R50 --execution cuda_graph"
pair gpt_decode gpt_eager "$GPT" gpt_aot_graph "$GPT --execution aot_cuda_graph"
{
  for f in "$OUT"/*.explain.txt; do echo "== $(basename "$f" .explain.txt): $(tail -1 "$f")"; done
  for f in "$OUT"/*.compare.txt; do
    echo "== $(basename "$f" .compare.txt)"
    sed -n '2p;/^why/,/^B: /p' "$f"
  done
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
