#!/bin/bash
# The side-by-side suite of issue 7: each case through the real daemon and CLI
# (gpubenchd on loopback, gpubench submit, a gpubench-worker per job) and
# through the Python PyTorch reference (bench/reference/reference.py), with the
# same shapes, precision and measurement rule. Prints one table: case,
# gpubench figure and its CV over repeats, Python figure and its CV, ratio, goal.
# Usage, in the checkout root of a GPU host after deploy/build.sh --bundle DIR -DCMAKE_BUILD_TYPE=Release
#   (the build the committed figures used; BUILD=build-wheel after FLAVOUR=wheel deploy/build.sh):
#   OUT=/tmp/sbs bash bench/side_by_side.sh
# ONLY=regex picks cases. REPEAT=N (default 1) measures each case N times in
# one worker (gpubench --trials N) and in one Python process (--repeat N).
# MIN_MS and MAX_MS (default 2000 and 20000) bound each measurement, on both sides.
# PROFILE=1 also profiles the model cases on both sides (a separate window
# after the measured one) and prints where a step's time goes
# (bench/trace_summary.py).
set -uo pipefail
REPEAT=${REPEAT:-1}
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50081}" || exit 1
MIN_MS=${MIN_MS:-2000}
MAX_MS=${MAX_MS:-20000}
rule="--warmup 10 --min-time-ms $MIN_MS --max-time-ms $MAX_MS --cudnn-benchmark true --trials $REPEAT"
prule="--repeat $REPEAT --min-time $((MIN_MS / 1000)).$((MIN_MS % 1000 / 100)) --max-time $((MAX_MS / 1000))"
rows="$OUT/rows.tsv"
profiles="$OUT/profiles.jsonl"
: > "$rows"
: > "$profiles"

# A finished job's figure and its CV over trials (percent), tab-separated.
figure() {  # job field
  "$B/gpubench" show "$1" --output json | python3 -c "
import json, statistics, sys
r = json.load(sys.stdin)['runs'][0]['result']
tput = r.get('throughput_samples_per_s', 0)
v = {'tput': tput, 'tflops': r.get('achieved_tflops', 0), 'gbps': r.get('bandwidth_gb_per_s', 0),
     'wait': 100 * r.get('data_wait_share', 0), 'us': 1e6 / tput if tput else 0}['$2']
t = [x.get('throughput_samples_per_s', 0) for x in r.get('trials', [])]
cv = 100 * statistics.stdev(t) / statistics.mean(t) if len(t) > 1 else 0
print(f'{v}\t{cv}')"
}

# The reference's figure and its CV over repeats (percent), tab-separated.
reference() {  # name field "reference flags" "more reference flags"
  python3 bench/reference/reference.py --case "$1" $3 ${4:-} 2>> "$OUT/$1.err" |
    tee "$OUT/$1.python.json" | python3 -c "
import json, sys
d = json.loads(sys.stdin.read())
v = {'tput': d.get('samples_per_s'), 'tflops': d.get('tflops'), 'gbps': d.get('gb_per_s'),
     'us': d.get('us_per_iter')}['$2']
print(f\"{v}\t{100 * d.get('cv', 0)}\")" 2>> "$OUT/$1.err"
}

# Profiles one configuration through gpubench (a spec with profiling on) and
# through the reference, and appends both step breakdowns to $profiles.
profile_case() {  # name "gpubench flags" "reference flags"
  local name=$1 spec="$OUT/profile-spec.json" job run
  echo '{"measurement": {"min_time_ms": 500, "max_time_ms": 3000},
         "profiling": {"enabled": true, "iterations": 5, "top_operators": 10}}' > "$spec"
  job=$("$B/gpubench" submit "$spec" --warmup 10 --cudnn-benchmark true $2 2>> "$OUT/$name.err")
  "$B/gpubench" watch "$job" > "$OUT/$name.profile.txt" 2>> "$OUT/$name.err"
  run=$("$B/gpubench" show "$job" --output json |
        python3 -c "import json,sys; print(json.load(sys.stdin)['runs'][0]['run_id'])")
  "$B/gpubench" trace "$run" -o "$OUT/$name.gpubench.trace.json" >> "$OUT/$name.err" 2>&1 &&
    python3 bench/trace_summary.py "$OUT/$name.gpubench.trace.json" 5 "$name gpubench" >> "$profiles"
  [ -n "$3" ] || return 0
  python3 bench/reference/reference.py --case "$name" $3 --min-time 0.5 \
      --profile "$OUT/$name.python.trace.json" > /dev/null 2>> "$OUT/$name.err" &&
    python3 bench/trace_summary.py "$OUT/$name.python.trace.json" 5 "$name python" >> "$profiles"
}

# case NAME GOAL FIELD "gpubench flags" "reference flags"
# FIELD tput+wait adds a second row, NAME_wait, from the same job.
case_() {
  local name=$1 goal=$2 field=$3 gflags=$4 pflags=$5
  [[ $name =~ ${ONLY:-.} ]] || return 0
  echo "== $name" >&2
  local job g p
  job=$("$B/gpubench" submit $rule $gflags 2>> "$OUT/$name.err")
  "$B/gpubench" watch "$job" > "$OUT/$name.gpubench.txt" 2>> "$OUT/$name.err"
  g=$(figure "$job" "${field%+wait}" 2>> "$OUT/$name.err")
  p=$'-\t-'
  if [ -n "$pflags" ]; then
    p=$(reference "$name" "$field" "$prule" "$pflags")
    [ -n "$p" ] || p=$'error\t-'
  fi
  [ -n "$g" ] || g=$'error\t-'
  printf "%s\t%s\t%s\t%s\t%s\n" "$name" "$g" "$p" "${field%+wait}" "$goal" >> "$rows"
  if [[ $field == *+wait ]]; then
    g=$(figure "$job" wait 2>> "$OUT/$name.err")
    [ -n "$g" ] || g=$'error\t-'
    printf "%s\t%s\t-\t-\t-\twait\twait%% of the row above\n" "${name}_wait" "${g%%$'\t'*}" >> "$rows"
  fi
  if [ "${PROFILE:-0}" = 1 ] && [[ $gflags == *"--mode "* ]]; then
    profile_case "$name" "$gflags" "$pflags"
  fi
}

# The harness's own cost per iteration: a step that issues nothing.
case_ harness_empty_step "gpubench <=20 us/iteration" us \
  "--workload empty --device cuda --min-time-ms 500 --max-time-ms 1000" \
  "--workload empty --min-time 0.5 --max-time 1"
R50="--workload resnet50 --device cuda"
case_ r50_infer_bs32_fp32 "ratio>=1.0 (eager)" tput \
  "$R50 --mode infer --batch 32 --precision fp32" \
  "--workload resnet50 --mode infer --batch 32 --precision fp32"
# channels_last alone in fp32 (lab 5 saw it at 0.84x of NCHW): the same in
# Python tells whether that is cuDNN's or gpubench's.
case_ r50_infer_bs32_fp32_cl "ratio>=1.0 (eager)" tput \
  "$R50 --mode infer --batch 32 --precision fp32 --channels-last true" \
  "--workload resnet50 --mode infer --batch 32 --precision fp32 --channels-last"
# PyTorch's default fp32 (TF32 in cuDNN's convolutions, not in matmuls).
case_ r50_infer_bs256_fp32_default "ratio>=1.0 (eager)" tput \
  "$R50 --mode infer --batch 256 --precision fp32_default" \
  "--workload resnet50 --mode infer --batch 256 --precision fp32_default"
case_ r50_train_bs64_fp32_default "ratio>=1.0 (eager)" tput \
  "$R50 --mode train --batch 64 --precision fp32_default" \
  "--workload resnet50 --mode train --batch 64 --precision fp32_default"
case_ r50_infer_bs32_fp16_cl_graph "ratio>=1.0 (torch.compile)" tput \
  "$R50 --mode infer --batch 32 --precision fp16 --channels-last true --execution cuda_graph" \
  "--workload resnet50 --mode infer --batch 32 --precision fp16 --channels-last --compile"
case_ r50_infer_bs256_fp16_cl "ratio>=1.0 (eager)" tput \
  "$R50 --mode infer --batch 256 --precision fp16 --channels-last true" \
  "--workload resnet50 --mode infer --batch 256 --precision fp16 --channels-last"
# Compiled execution (issue 18): AOTInductor packages of the Python twins
# against torch.compile in Python, same precision and memory format. The
# first job of a config compiles (compile time is reported, not measured).
case_ r50_infer_bs256_fp16_cl_aot "ratio>=1.0 (torch.compile default)" tput \
  "$R50 --mode infer --batch 256 --precision fp16 --channels-last true --execution aot" \
  "--workload resnet50 --mode infer --batch 256 --precision fp16 --channels-last --compile"
case_ r50_infer_bs32_fp16_cl_aot_graph "ratio>=1.0 (torch.compile reduce-overhead)" tput \
  "$R50 --mode infer --batch 32 --precision fp16 --channels-last true --execution aot_cuda_graph" \
  "--workload resnet50 --mode infer --batch 32 --precision fp16 --channels-last --compile --compile-mode reduce-overhead"
case_ r18_infer_bs256_fp16_cl_aot "ratio>=1.0 (torch.compile default)" tput \
  "--workload resnet18 --device cuda --mode infer --batch 256 --precision fp16 --channels-last true --execution aot" \
  "--workload resnet18 --mode infer --batch 256 --precision fp16 --channels-last --compile"
case_ mlp_small_infer_bs16_aot "ratio>=1.0 (torch.compile default)" tput \
  "--workload mlp --model-size small --device cuda --mode infer --batch 16 --execution aot" \
  "--workload mlp --mode infer --batch 16 --compile"
case_ simple_cnn_infer_bs256_aot "ratio>=1.0 (torch.compile default)" tput \
  "--workload simple_cnn --model-size small --device cuda --mode infer --batch 256 --execution aot" \
  "--workload simple_cnn --mode infer --batch 256 --compile"
case_ unet_infer_bs16_aot "ratio>=1.0 (torch.compile default)" tput \
  "--workload unet --device cuda --mode infer --batch 16 --execution aot" \
  "--workload unet --mode infer --batch 16 --compile"
case_ cnn_lstm_infer_bs32_aot "ratio>=1.0 (torch.compile default)" tput \
  "--workload cnn_lstm --device cuda --mode infer --batch 32 --execution aot" \
  "--workload cnn_lstm --mode infer --batch 32 --compile"
case_ transformer_infer_bs16_fp16_aot "ratio>=1.0 (torch.compile default)" tput \
  "--workload transformer --device cuda --mode infer --batch 16 --precision fp16 --execution aot" \
  "--workload transformer --mode infer --batch 16 --precision fp16 --compile"
case_ r50_train_bs32_fp16_cl "ratio>=1.5 (eager+GradScaler)" tput \
  "$R50 --mode train --batch 32 --precision fp16 --channels-last true" \
  "--workload resnet50 --mode train --batch 32 --precision fp16 --channels-last"
case_ r50_train_bs32_fp16_cl_graph "ratio>=1.5 (vs Python eager)" tput \
  "$R50 --mode train --batch 32 --precision fp16 --channels-last true --execution cuda_graph" \
  "--workload resnet50 --mode train --batch 32 --precision fp16 --channels-last"
case_ r50_train_bs256_fp16_cl "ratio>=1.0 (eager)" tput \
  "$R50 --mode train --batch 256 --precision fp16 --channels-last true" \
  "--workload resnet50 --mode train --batch 256 --precision fp16 --channels-last"
# Training is not compiled (AOTInductor compiles inference): Python's
# torch.compile training is the reference gpubench does not reach.
case_ r50_train_bs256_fp16_cl_vs_compile "none: torch.compile train (not reached)" tput \
  "$R50 --mode train --batch 256 --precision fp16 --channels-last true" \
  "--workload resnet50 --mode train --batch 256 --precision fp16 --channels-last --compile"
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
case_ r18_256_host_8L_pinned "wait<=5%, >=0.9x device input" tput+wait \
  "$PIPE --input host --loader-threads 8 --pinned true" ""
case_ r18_256_host_0L_pinned "starvation: 0 loader threads" tput+wait \
  "$PIPE --input host --loader-threads 0 --pinned true" ""

echo
python3 - "$rows" "$profiles" <<'EOF'
import json, sys
print(f"{'case':32} {'gpubench':>10} {'cv%':>5} {'python':>10} {'cv%':>5} {'ratio':>7}  unit     goal")
fmt = lambda v, w, d: f"{float(v):{w}.{d}f}" if v not in ("-", "error", "") else f"{v:>{w}}"
for line in open(sys.argv[1]):
    name, g, gcv, p, pcv, field, goal = line.rstrip("\n").split("\t")
    unit = {"tput": "samp/s", "tflops": "TFLOP/s", "gbps": "GB/s", "wait": "wait%",
            "us": "us/iter"}[field]
    try:
        ratio = f"{float(g) / float(p):.3f}"
    except (ValueError, ZeroDivisionError):
        ratio = "-"
    print(f"{name:32} {fmt(g, 10, 1)} {fmt(gcv, 5, 2)} {fmt(p, 10, 1)} {fmt(pcv, 5, 2)} "
          f"{ratio:>7}  {unit:8} {goal}")
rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
if rows:
    print(f"\n{'profiled step (mean of 5)':40} {'step ms':>8} {'gpu ms':>8} {'gpu%':>6} "
          f"{'host ops':>9} {'op ms':>8} {'launches':>9}")
    for r in rows:
        print(f"{r['label']:40} {r['step_ms']:8.3f} {r['gpu_ms']:8.3f} {100 * r['gpu_share']:6.1f} "
              f"{r['host_ops']:9.1f} {r['host_op_ms']:8.3f} {r['launches']:9.1f}")
EOF
