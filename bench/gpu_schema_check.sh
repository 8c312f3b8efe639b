#!/bin/bash
# Issue 45 on a GPU host, after deploy/build.sh --bundle: the figures of
# docs/performance.md that the schema change could move (the eager rows,
# resnet50 aot, gpt 124m train and decode), each against Python as there,
# and issue 46's first parameter, peer_device: the copy bandwidth of every
# ordered pair of GPUs (needs 2 or more).
# Usage: OUT=/tmp/i45 bash bench/gpu_schema_check.sh PART...
#   peer  the pair matrix: copy device_to_device from each GPU to each
#         (itself included), by the copy engine and by a kernel (--copy-kernel)
#   eager side_by_side.sh's eager rows and the matmul and copy kernels (each
#         run bounded at 20 s: cudnn's autotuning of a training run's first
#         steps takes seconds, and max_time_ms bounds the warm-up too)
#   lm    lm_side_by_side.sh's gpt 124m training and b1 decoding
#   aot   side_by_side.sh's resnet50 aot row (two compiles: minutes)
set -uo pipefail
here=$(dirname "$0")
OUT=${OUT:-/tmp/gpubench-schema-check}
mkdir -p "$OUT"
for part in "$@"; do
  start=$(date +%s)
  case $part in
    peer)
      (
        OUT=$OUT/peer
        source "$here/lib.sh"  # B, OUT, start_daemon, submit_job
        start_daemon "${PORT:-50097}" || exit 1
        gpus=$(nvidia-smi -L | wc -l)
        peers=$(seq -s, 0 $((gpus - 1)))
        for from in $(seq 0 $((gpus - 1))); do
          for by in engine kernel; do
            submit_job "from$from-$by" --workload copy --device "cuda:$from" \
              --copy-direction device_to_device --peer-device "$peers" --copy-bytes 1073741824 \
              $([ $by = kernel ] && echo --copy-kernel) \
              --warmup 5 --min-time-ms 1000 --max-time-ms 5000 > /dev/null
            "$B/gpubench" show "$JOB" --output json > "$OUT/$by-from$from.json"
          done
        done
        for by in engine kernel; do python3 - "$by" "$OUT"/$by-from*.json << 'PY'
import json, sys
print(f"copy device_to_device by the {sys.argv[1]}, 1 GiB, GB/s (p50 step); rows from, columns to")
for path in sys.argv[2:]:
    runs = json.load(open(path))["runs"]
    cells = [f'{r["result"].get("bandwidth_gb_per_s", 0):8.1f}' if r["state"] == "RUN_STATE_SUCCEEDED"
             else f'{r["state"]}: {r.get("error", "")}' for r in runs]
    print(runs[0]["config"]["device"], " ".join(cells))
PY
        done
      ) 2>&1 | tee "$OUT/peer.txt"
      ;;
    eager)
      ONLY='^(r50_infer_bs32_fp32|r50_infer_bs256_fp16_cl|r50_train_bs256_fp16_cl|r50_train_bs32_fp16_cl|matmul_bf16_8192|copy_h2d_256MiB_pinned)$' \
        MIN_MS=${MIN_MS:-2000} MAX_MS=${MAX_MS:-20000} OUT=$OUT/eager \
        bash "$here/side_by_side.sh" 2>&1 | tee "$OUT/eager.txt"
      ;;
    lm)
      ONLY='^(gpt124m_train_b16_eager|gpt124m_decode_b1_graph|gpt124m_decode_b1_eager)$' \
        MIN_MS=${MIN_MS:-2000} MAX_MS=${MAX_MS:-6000} OUT=$OUT/lm \
        bash "$here/lm_side_by_side.sh" 2>&1 | tee "$OUT/lm.txt"
      ;;
    aot)
      ONLY='^r50_infer_bs256_fp16_cl_aot$' MIN_MS=${MIN_MS:-2000} MAX_MS=${MAX_MS:-20000} \
        OUT=$OUT/aot bash "$here/side_by_side.sh" 2>&1 | tee "$OUT/aot.txt"
      ;;
    *) echo "unknown part $part (peer, eager, lm, aot)" >&2; exit 2 ;;
  esac
  echo "== $part: $(( $(date +%s) - start )) s" | tee -a "$OUT/times.txt"
done
