#!/bin/bash
# How large a decoding batch fits (issue 32): gpt 1.3b decoding as a CUDA
# graph with an 896-token prompt and 128 new tokens (its 1,024-token
# context), batch swept until the device runs out of memory. The run out of
# memory stops the sweep, the larger batches are skipped, and show names the
# largest batch that fit. Then the same for llama 1b, 2,048-token prompt.
# Usage on a GPU host after deploy/build.sh --bundle: OUT=/tmp/fit bash bench/gpu_lm_fit.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, submit_job
start_daemon "${PORT:-50094}" || exit 1
R="--precision bf16 --device cuda --mode infer --execution cuda_graph --warmup 1
   --min-time-ms 500 --max-time-ms 3000"
submit_job gpt13b --workload gpt --model-size 1.3b --prompt-len 896 --new-tokens 128 \
  --batch 64,128,256,384,512,1024 $R
"$B/gpubench" show "$JOB" > "$OUT/gpt13b.show.txt" 2>&1
submit_job llama1b --workload llama --prompt-len 2048 --new-tokens 128 \
  --batch 64,256,512,1024,2048 $R
"$B/gpubench" show "$JOB" > "$OUT/llama1b.show.txt" 2>&1
for t in gpt13b llama1b; do
  echo "== $t"
  grep -E "largest batch|out of memory|skipped" "$OUT/$t.show.txt"
  python3 - "$OUT/$t.csv" << 'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    gib = lambda k: "%.1f GiB" % (float(r[k]) / 2**30) if r.get(k) else "-"
    print(f"{r['config'][:48]:48} {r['state']:14} tokens/s {r['tokens_per_s'] or '-':>12.10}"
          f" ITL p50 {r['itl_p50_ms'] or '-':>7.5} ms  peak alloc {gib('peak_allocated_bytes')}"
          f" reserved {gib('peak_reserved_bytes')}")
PY
done
