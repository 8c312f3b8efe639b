#!/bin/bash
# Issue 47 on a GPU host, after deploy/build.sh --bundle: serving (mode
# serve) against the static decode, and the throughput-interactivity curve.
# 1. For each concurrency C of $CS (default 1 16 64) and each execution of
#    $EXECS (default eager cuda_graph): gpt $SIZE (default 124m) bf16, a
#    closed loop of C clients with requests of $ISL prompt and $OSL output
#    tokens (default 512/256), against `--mode infer` at batch C
#    with the same prompt and new tokens (the ratio of serving's output
#    tokens/s to the static decode's batch / mean ITL, decode steps only:
#    serving's figure also pays every request's prefill), and against the
#    Python twin (bench/reference/serve.py) on the same requests: output
#    tokens/s and p99 TPOT.
#    The "with prefill" ratio is against the static batch's whole
#    generation: C x OSL tokens over its prefill (TTFT) and OSL - 1 decode
#    steps, the work a continuously batched closed loop of equal requests
#    also does.
# 2. PARETO="gpt:1.3b llama:1b" (default; empty skips): each model's closed
#    loop at each C of $PARETO_CS under $PARETO_EXEC (default cuda_graph),
#    output tokens/s against tokens/s per user, and joules per output token.
# 3. FIND="llama:1b" (default; empty skips): --find max-rate for the largest
#    Poisson rate whose TTFT p99 <= $SLO_TTFT ms (200) and TPOT p99 <=
#    $SLO_TPOT ms (20), a cache of $FIND_BATCH slots (64), $FIND_REQS
#    measured requests (400: enough for the p99's interval) a rate.
# 4. CHUNK="llama:1b" (default; empty skips): an open loop of $CHUNK_RATE
#    requests/s (8) of $CHUNK_ISL prompt tokens (256:4096) and $OSL output
#    into $CHUNK_BATCH slots (32), $CHUNK_REQS measured (200), prefilled
#    whole and in chunks of $CHUNK_TOKENS (512): the token gaps' p99 (what a
#    long prompt's prefill stalls) against TTFT's (what chunking delays);
#    under each attention of $CHUNK_ATTENTION (default auto: LibTorch's
#    choice, cuDNN's on Hopper, which builds a graph for each new shape;
#    efficient takes a chunk's mask and builds none).
# Each run's requests: $REQS_PER_C x C measured (at least $MIN_REQS), the
# warm-up C. Prints a row as each finishes ($OUT/table.txt); every job's
# table is in $OUT. STATIC_MS bounds each static decode run (default 15000).
# Usage: OUT=/tmp/serve [CS="1 16 64"] [PARETO=...] [FIND=...] [CHUNK=...] bash bench/gpu_serve.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon, submit_job
start_daemon "${PORT:-50097}" || exit 1
ISL=${ISL:-512} OSL=${OSL:-256} SIZE=${SIZE:-124m}
REQS_PER_C=${REQS_PER_C:-3} MIN_REQS=${MIN_REQS:-12}
common=(--precision bf16 --device cuda:0 --max-time-ms "${MAX_MS:-120000}")
requests() { local n=$(($1 * REQS_PER_C)); echo $((n < MIN_REQS ? MIN_REQS : n)); }
# A figure of the job's only run from its JSON: result.KEY (dots for fields).
figure() {  # JOB KEY
  "$B/gpubench" show "$1" --output json | python3 -c '
import json, sys
run = json.load(sys.stdin)["runs"][0]
v = run.get("result", {})
for k in sys.argv[1].split("."):
    v = v.get(k, 0) if isinstance(v, dict) else 0
print(v if v else 0)' "$2"
}
# Each row as it comes (a run cut short still leaves the rows before it).
row() { echo "$1" | tee -a "$OUT/table.txt"; }
: > "$OUT/table.txt"
echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), ISL/OSL $ISL/$OSL, bf16"
for c in ${CS:-1 16 64}; do
  python3 bench/reference/serve.py --model gpt --size "$SIZE" --slots "$c" --concurrency "$c" \
    --input-len "$ISL" --output-len "$OSL" --num-requests "$(requests "$c")" \
    > "$OUT/twin-c$c.json" 2> "$OUT/twin-c$c.err" || FAILED=$((FAILED + 1))
  for exec in ${EXECS:-eager cuda_graph}; do
    submit_job "static-c$c-$exec" --workload gpt --model-size "$SIZE" --mode infer --batch "$c" \
      --execution "$exec" --prompt-len "$ISL" --new-tokens "$OSL" --warmup 2 \
      --min-iterations 5 "${common[@]}" --max-time-ms "${STATIC_MS:-15000}" > /dev/null
    static=$(figure "$JOB" tokens_per_s)
    static_ttft=$(figure "$JOB" time_to_first_token.mean_ms)
    submit_job "serve-c$c-$exec" --workload gpt --model-size "$SIZE" --mode serve --batch "$c" \
      --execution "$exec" --input-len "$ISL" --output-len "$OSL" \
      --num-requests "$(requests "$c")" "${common[@]}" > /dev/null
    serve=$(figure "$JOB" serve.output_tokens_per_s)
    tpot=$(figure "$JOB" serve.tpot.p50_ms)
    ttft=$(figure "$JOB" serve.ttft.p50_ms)
    tpot99=$(figure "$JOB" serve.tpot.p99_ms)
    little=$(figure "$JOB" serve.mean_in_flight)/$(figure "$JOB" serve.littles_law_in_flight)
    row "$(python3 - "$static" "$serve" "$tpot" "$tpot99" "$ttft" "$little" "$OUT/twin-c$c.json" \
        "$static_ttft" << PY
import json, sys
static, serve, tpot, tpot99, ttft = map(float, sys.argv[1:6])
static_ttft = float(sys.argv[8])
# The static batch's whole generation: its prefill, then OSL - 1 steps.
generate = $c * $OSL / (static_ttft / 1e3 + ($OSL - 1) * $c / static) if static else 0
try:
    twin = json.load(open(sys.argv[7]))
except ValueError:
    twin = {}
py, py99 = twin.get("output_tokens_per_s", 0), twin.get("tpot_p99_ms", 0)
print(f"gpt $SIZE c$c $exec  static {static:8.1f}  serve {serve:8.1f} ({serve / static if static else 0:5.3f}x;"
      f" with prefill {generate:8.1f}, {serve / generate if generate else 0:5.3f}x)"
      f"  python eager {py:8.1f} ({serve / py if py else 0:5.3f}x)  tpot p50 {tpot:6.3f} p99 {tpot99:6.3f}"
      f" (python {py99:6.3f}) ms  ttft p50 {ttft:7.2f} ms  in flight/little {sys.argv[6]}")
PY
)"
  done
done
for model in ${PARETO-gpt:1.3b llama:1b}; do
  for c in ${PARETO_CS:-1 8 32 128}; do
    submit_job "pareto-${model/:/-}-c$c" --workload "${model%%:*}" --model-size "${model##*:}" \
      --mode serve --batch "$c" --input-len "$ISL" --output-len "$OSL" \
      --execution "${PARETO_EXEC:-cuda_graph}" \
      --num-requests "$(requests "$c")" "${common[@]}" > /dev/null
    row "$(printf '%-10s c%-4s output tok/s %9.1f  tok/s/user %7.1f  ttft p50 %8.2f ms  J/out tok %.4f' \
      "$model" "$c" "$(figure "$JOB" serve.output_tokens_per_s)" \
      "$(figure "$JOB" serve.output_tokens_per_s_per_user)" "$(figure "$JOB" serve.ttft.p50_ms)" \
      "$(figure "$JOB" serve.joules_per_output_token)")"
  done
done
for model in ${FIND-llama:1b}; do
  "$B/gpubench" submit --workload "${model%%:*}" --model-size "${model##*:}" --mode serve \
    --batch "${FIND_BATCH:-64}" --execution "${PARETO_EXEC:-cuda_graph}" --input-len "$ISL" \
    --output-len "$OSL" --num-requests "${FIND_REQS:-400}" --request-rate "${FIND_FROM:-8}" \
    --slo "ttft_ms=${SLO_TTFT:-200},tpot_ms=${SLO_TPOT:-20}" --find max-rate \
    --limit "${FIND_LIMIT:-8}" "${common[@]}" > "$OUT/find-${model/:/-}.txt" \
    2> "$OUT/find-${model/:/-}.progress"
  grep "rate .*requests/s:" "$OUT/find-${model/:/-}.progress" | tee -a "$OUT/table.txt"
  row "$model $(tail -1 "$OUT/find-${model/:/-}.txt")"
done
for model in ${CHUNK-llama:1b}; do
  for attention in ${CHUNK_ATTENTION:-auto}; do
    for chunk in 0 "${CHUNK_TOKENS:-512}"; do
      submit_job "chunk-${model/:/-}-$attention-$chunk" --workload "${model%%:*}" \
        --model-size "${model##*:}" --mode serve --batch "${CHUNK_BATCH:-32}" \
        --execution "${PARETO_EXEC:-cuda_graph}" --attention "$attention" \
        --input-len "${CHUNK_ISL:-256:4096}" --output-len "$OSL" --request-rate "${CHUNK_RATE:-8}" \
        --num-requests "${CHUNK_REQS:-200}" --prefill-chunk "$chunk" "${common[@]}" > /dev/null
      row "$(printf '%-10s %-9s chunk %-5s itl p50 %6.2f p99 %7.2f ms  tpot p99 %6.2f ms  ttft p50 %8.2f p99 %8.2f ms  output tok/s %8.1f' \
        "$model" "$attention" "$chunk" "$(figure "$JOB" serve.itl.p50_ms)" \
        "$(figure "$JOB" serve.itl.p99_ms)" "$(figure "$JOB" serve.tpot.p99_ms)" \
        "$(figure "$JOB" serve.ttft.p50_ms)" "$(figure "$JOB" serve.ttft.p99_ms)" \
        "$(figure "$JOB" serve.output_tokens_per_s)")"
    done
  done
done
exit "$FAILED"
