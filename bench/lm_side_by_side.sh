#!/bin/bash
# Issue 32's language-model rows: each case through the daemon and CLI
# (gpubench submit --wait) and through the Python twin
# (bench/reference/lm.py: the same GPT-2 and Llama shapes, PyTorch eager or
# torch.compile), the same measurement rule on both sides. Prints one table:
# case, gpubench's figure, Python's, their ratio (higher is better for
# gpubench: tokens/s, or Python's latency over gpubench's).
# Usage, in the checkout root of a GPU host after deploy/build.sh --bundle:
#   OUT=/tmp/lm bash bench/lm_side_by_side.sh
# ONLY=regex picks cases; MIN_MS/MAX_MS bound each measurement (default 3000
# and 20000); SMALL=1 runs tiny CPU shapes (a check of the script itself).
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50083}" || exit 1
MIN_MS=${MIN_MS:-3000}
MAX_MS=${MAX_MS:-20000}
rule="--warmup 3 --min-time-ms $MIN_MS --max-time-ms $MAX_MS"
prule="--min-time $((MIN_MS / 1000)) --max-time $((MAX_MS / 1000))"
rows="$OUT/rows.tsv"
: > "$rows"
DEVICE=cuda
TINY=()
PTINY=()
if [ "$SMALL" = 1 ]; then
  DEVICE=cpu
  TINY=(--model-size custom --num-layers 2 --hidden-size 64 --num-heads 4 --num-kv-heads 2
        --ffn-size 128 --vocab-size 1000 --seq-len 128 --prompt-len 32 --new-tokens 16)
  PTINY=(--layers 2 --width 64 --heads 4 --vocab 1000 --context 128 --seq 128 --prompt 32
         --new-tokens 16)
fi

# gpubench's figure of the job's first run: tokens (tokens/s), mfu (%),
# ttft or itl (p50 ms).
figure() {  # job field
  "$B/gpubench" show "$1" --output json | python3 -c "
import json, sys
r = json.load(sys.stdin)['runs'][0].get('result', {})
print({'tokens': r.get('tokens_per_s', 0), 'mfu': 100 * r.get('mfu', 0),
       'ttft': r.get('time_to_first_token', {}).get('p50_ms', 0),
       'itl': r.get('inter_token_latency', {}).get('p50_ms', 0),
       'itl99': r.get('inter_token_latency', {}).get('p99_ms', 0),
       'gbps': r.get('decode_bandwidth_gb_per_s', 0)}['$2'])"
}

# The twin's figure from its JSON.
pfigure() {  # json field
  python3 -c "
import json, sys
d = json.loads(open('$1').read())
print({'tokens': d.get('tokens_per_s'), 'mfu': 100 * (d.get('mfu') or 0),
       'ttft': d.get('ttft_ms'), 'itl': d.get('itl_p50_ms'), 'itl99': d.get('itl_p99_ms'),
       'gbps': d.get('weight_bytes_per_token_gb_per_s')}['$2'])"
}

# case NAME "gpubench flags" "lm.py flags" FIELD... (the first field is the ratio's)
case_() {
  local name=$1 gflags=$2 pflags=$3
  shift 3
  [[ $name =~ ${ONLY:-.} ]] || return 0
  echo "== $name" >&2
  local job
  job=$("$B/gpubench" submit $rule --device "$DEVICE" ${TINY[@]+"${TINY[@]}"} $gflags \
        2>> "$OUT/$name.err")
  echo "$job" > "$OUT/$name.job"
  "$B/gpubench" watch "$job" > "$OUT/$name.gpubench.txt" 2>> "$OUT/$name.err"
  local tiny=("${PTINY[@]+"${PTINY[@]}"}")
  [[ $SMALL = 1 && $pflags == *"--model llama"* ]] && tiny+=(--kv-heads 2 --ffn 128)
  timeout "${PY_TIMEOUT:-300}" python3 bench/reference/lm.py $pflags ${tiny[@]+"${tiny[@]}"} $prule \
    --name "$name" > "$OUT/$name.python.json" 2>> "$OUT/$name.err"
  for field in "$@"; do
    local g p
    g=$(figure "$job" "$field" 2>> "$OUT/$name.err")
    p=$(pfigure "$OUT/$name.python.json" "$field" 2>> "$OUT/$name.err")
    printf "%s\t%s\t%s\t%s\n" "$name" "$field" "${g:-error}" "${p:-error}" >> "$rows"
  done
}

GPT="--workload gpt --precision bf16"
case_ gpt124m_train_b16_eager "$GPT --mode train --batch 16 --optimizer adamw --learning-rate 3e-4" \
  "--case train --model gpt --size 124m --batch 16 --seq 1024 --precision bf16" tokens mfu
case_ gpt124m_train_b16_vs_compile "$GPT --mode train --batch 16 --optimizer adamw --learning-rate 3e-4" \
  "--case train --model gpt --size 124m --batch 16 --seq 1024 --precision bf16 --compile" tokens mfu
case_ gpt124m_decode_b1_eager "$GPT --mode infer --batch 1" \
  "--case decode --model gpt --size 124m --batch 1 --prompt 512 --new-tokens 128" itl ttft itl99
case_ gpt124m_decode_b1_graph "$GPT --mode infer --batch 1 --execution cuda_graph" \
  "--case decode --model gpt --size 124m --batch 1 --prompt 512 --new-tokens 128 --compile" itl ttft itl99 gbps
case_ gpt124m_decode_b16_graph "$GPT --mode infer --batch 16 --execution cuda_graph" \
  "--case decode --model gpt --size 124m --batch 16 --prompt 512 --new-tokens 128 --compile" itl ttft
case_ gpt1.3b_decode_b1_graph "$GPT --model-size 1.3b --mode infer --batch 1 --execution cuda_graph" \
  "--case decode --model gpt --size 1.3b --batch 1 --prompt 512 --new-tokens 128 --compile" itl ttft gbps
# AOTInductor: the twin's prefill and step compiled (worker/python/gpubench_models/lm_aot.py),
# the step replayed as a CUDA graph, against torch.compile's reduce-overhead.
case_ gpt124m_decode_b1_aot "$GPT --mode infer --batch 1 --execution aot" \
  "--case decode --model gpt --size 124m --batch 1 --prompt 512 --new-tokens 128 --compile" itl ttft
case_ gpt124m_decode_b1_aot_graph "$GPT --mode infer --batch 1 --execution aot_cuda_graph" \
  "--case decode --model gpt --size 124m --batch 1 --prompt 512 --new-tokens 128 --compile" itl ttft itl99 gbps
case_ gpt124m_decode_b16_aot_graph "$GPT --mode infer --batch 16 --execution aot_cuda_graph" \
  "--case decode --model gpt --size 124m --batch 16 --prompt 512 --new-tokens 128 --compile" itl ttft
case_ gpt1.3b_decode_b1_aot_graph "$GPT --model-size 1.3b --mode infer --batch 1 --execution aot_cuda_graph" \
  "--case decode --model gpt --size 1.3b --batch 1 --prompt 512 --new-tokens 128 --compile" itl ttft gbps
case_ llama1b_decode_b1_aot_graph "--workload llama --precision bf16 --mode infer --batch 1 --execution aot_cuda_graph" \
  "--case decode --model llama --size 1b --batch 1 --prompt 512 --new-tokens 128 --compile" itl ttft gbps
case_ gpt350m_train_b8_eager "$GPT --model-size 350m --mode train --batch 8 --optimizer adamw --learning-rate 3e-4" \
  "--case train --model gpt --size 350m --batch 8 --seq 1024 --precision bf16" tokens mfu
case_ llama1b_train_b4_eager "--workload llama --precision bf16 --mode train --batch 4 --optimizer adamw --learning-rate 3e-4" \
  "--case train --model llama --size 1b --batch 4 --seq 1024 --precision bf16" tokens mfu
case_ llama1b_decode_b1_graph "--workload llama --precision bf16 --mode infer --batch 1 --execution cuda_graph" \
  "--case decode --model llama --size 1b --batch 1 --prompt 512 --new-tokens 128 --compile" itl ttft gbps

# COPY_PEAK=1: the host's device-to-device copy, then each decode job's
# language-model table from show (its reads against that copy's traffic).
if [ "${COPY_PEAK:-0}" = 1 ]; then
  "$B/gpubench" submit --workload copy --copy-direction device_to_device \
    --copy-bytes 1073741824 --device "$DEVICE" $rule --wait > "$OUT/copy_peak.txt" 2>&1
  for f in "$OUT"/*decode*.job; do
    [ -e "$f" ] && "$B/gpubench" show "$(cat "$f")" > "${f%.job}.show.txt" 2>&1
  done
fi

# The table: for tokens, mfu and gbps gpubench / Python; for latencies
# Python / gpubench (above 1: gpubench is faster either way).
python3 - "$rows" << 'PY'
import sys
print(f"{'case':36} {'figure':7} {'gpubench':>10} {'python':>10} {'ratio':>6}")
for line in open(sys.argv[1]):
    name, field, g, p = line.rstrip("\n").split("\t")
    try:
        g, p = float(g), float(p)
        ratio = (g / p if field in ("tokens", "mfu", "gbps") else p / g) if g and p else float("nan")
        print(f"{name:36} {field:7} {g:10.3f} {p:10.3f} {ratio:6.3f}")
    except ValueError:
        print(f"{name:36} {field:7} {g:>10} {p:>10}      -")
PY
