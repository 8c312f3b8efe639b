#!/bin/bash
# The side-by-side suite of issue 7: each case through the real daemon and CLI
# (gpubenchd on loopback, gpubench submit --wait, a gpubench-worker per job)
# and through the Python PyTorch reference (bench/reference/reference.py),
# with the same shapes, precision and measurement rule. Prints one table:
# case, gpubench figure, Python figure, ratio, goal.
# Usage, in the checkout root of a GPU host after .gpu/build.sh:
#   OUT=/tmp/sbs bash bench/side_by_side.sh          (ONLY=regex picks cases)
set -uo pipefail
B=${BUILD:-build-gpu}/bin
OUT=${OUT:-/tmp/gpubench-sbs}
mkdir -p "$OUT"
export GPUBENCH_HOST=127.0.0.1:${PORT:-50081}
"$B/gpubenchd" --listen "$GPUBENCH_HOST" --data-dir "$OUT/data" 2> "$OUT/daemon.log" &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
for _ in $(seq 100); do "$B/gpubench" jobs > /dev/null 2>&1 && break; sleep 0.2; done
rule="--warmup 10 --min-time-ms 2000 --max-time-ms 20000 --cudnn-benchmark true"
rows="$OUT/rows.tsv"
: > "$rows"

# gpubench figure of a finished job: samples/s, or TFLOP/s / GB/s / data-wait.
figure() {  # job field
  "$B/gpubench" show "$1" --output json | python3 -c "
import json, sys
r = json.load(sys.stdin)['runs'][0]['result']
f = '$2'
print({'tput': r.get('throughput_samples_per_s', 0), 'tflops': r.get('achieved_tflops', 0),
       'gbps': r.get('bandwidth_gb_per_s', 0), 'wait': 100 * r.get('data_wait_share', 0)}[f])"
}

# case NAME GOAL FIELD "gpubench flags" "reference flags" [higher]
case_() {
  local name=$1 goal=$2 field=$3 gflags=$4 pflags=$5
  [[ $name =~ ${ONLY:-.} ]] || return 0
  echo "== $name" >&2
  local job g p
  job=$("$B/gpubench" submit $rule $gflags 2>> "$OUT/$name.err")
  "$B/gpubench" watch "$job" > "$OUT/$name.gpubench.txt" 2>> "$OUT/$name.err"
  g=$(figure "$job" "$field" 2>> "$OUT/$name.err")
  p=-
  if [ -n "$pflags" ]; then
    p=$(python3 bench/reference/reference.py --case "$name" $pflags 2>> "$OUT/$name.err" |
        tee "$OUT/$name.python.json" | python3 -c "
import json, sys
d = json.loads(sys.stdin.read())
print({'tput': d.get('samples_per_s'), 'tflops': d.get('tflops'), 'gbps': d.get('gb_per_s')}['$field'])" 2>> "$OUT/$name.err")
    [ -n "$p" ] || p=error
  fi
  printf "%s\t%s\t%s\t%s\t%s\n" "$name" "${g:-error}" "$p" "$field" "$goal" >> "$rows"
}

R50="--workload resnet50 --device cuda"
case_ r50_infer_bs32_fp32 "ratio>=1.0 (eager)" tput \
  "$R50 --mode infer --batch 32 --precision fp32" \
  "--workload resnet50 --mode infer --batch 32 --precision fp32"
case_ r50_infer_bs32_fp16_cl_graph "ratio>=1.0 (torch.compile)" tput \
  "$R50 --mode infer --batch 32 --precision fp16 --channels-last true --execution cuda_graph" \
  "--workload resnet50 --mode infer --batch 32 --precision fp16 --channels-last --compile"
case_ r50_infer_bs256_fp16_cl "ratio>=1.0 (eager)" tput \
  "$R50 --mode infer --batch 256 --precision fp16 --channels-last true" \
  "--workload resnet50 --mode infer --batch 256 --precision fp16 --channels-last"
case_ r50_train_bs32_fp16_cl "ratio>=1.5 (eager+GradScaler)" tput \
  "$R50 --mode train --batch 32 --precision fp16 --channels-last true" \
  "--workload resnet50 --mode train --batch 32 --precision fp16 --channels-last"
case_ r50_train_bs256_fp16_cl "ratio>=1.0 (eager)" tput \
  "$R50 --mode train --batch 256 --precision fp16 --channels-last true" \
  "--workload resnet50 --mode train --batch 256 --precision fp16 --channels-last"
case_ mlp_small_train_bs16 "ratio>=2.0 (step <=0.5x)" tput \
  "--workload mlp --model-size small --device cuda --mode train --batch 16" \
  "--workload mlp --mode train --batch 16"
case_ mlp_small_train_bs16_graph "ratio>=5.0 (step <=0.2x)" tput \
  "--workload mlp --model-size small --device cuda --mode train --batch 16 --execution cuda_graph" \
  "--workload mlp --mode train --batch 16"
case_ unet_train_bs16_128 "ratio>=1.0 (eager)" tput \
  "--workload unet --device cuda --mode train --batch 16 --image-size 128" \
  "--workload unet --mode train --batch 16"
case_ bilstm_train_bs64 "ratio>=1.0 (eager)" tput \
  "--workload bilstm --device cuda --mode train --batch 64" \
  "--workload bilstm --mode train --batch 64"
case_ matmul_bf16_8192 "ratio>=0.95 (a @ b)" tflops \
  "--workload matmul --device cuda --matmul-size 8192 --precision bf16" \
  "--workload matmul --size 8192"
case_ copy_h2d_256MiB_pinned "ratio>=0.95" gbps \
  "--workload copy --device cuda --copy-bytes 268435456 --pinned true" \
  "--workload copy --size 268435456"
PIPE="--workload resnet18 --device cuda --mode train --batch 64 --precision bf16 --channels-last true --image-size 256"
case_ r18_256_device_input "reference for the host-input rows" tput "$PIPE --input device" ""
case_ r18_256_host_8L_pinned "wait<=5%, >=0.9x device input" tput \
  "$PIPE --input host --loader-threads 8 --pinned true" ""
case_ r18_256_host_8L_pinned_wait "wait% of the row above" wait \
  "$PIPE --input host --loader-threads 8 --pinned true" ""
case_ r18_256_host_0L_pinned "starvation: 0 loader threads" tput \
  "$PIPE --input host --loader-threads 0 --pinned true" ""
case_ r18_256_host_0L_pinned_wait "wait% of the row above" wait \
  "$PIPE --input host --loader-threads 0 --pinned true" ""

echo
python3 - "$rows" <<'EOF'
import sys
print(f"{'case':32} {'gpubench':>12} {'python':>12} {'ratio':>7}  unit    goal")
for line in open(sys.argv[1]):
    name, g, p, field, goal = line.rstrip("\n").split("\t")
    unit = {"tput": "samp/s", "tflops": "TFLOP/s", "gbps": "GB/s", "wait": "wait%"}[field]
    try:
        ratio = f"{float(g) / float(p):.3f}"
    except (ValueError, ZeroDivisionError):
        ratio = "-"
    fmt = lambda v: f"{float(v):12.1f}" if v not in ("-", "error", "") else f"{v:>12}"
    print(f"{name:32} {fmt(g)} {fmt(p)} {ratio:>7}  {unit:7} {goal}")
EOF
