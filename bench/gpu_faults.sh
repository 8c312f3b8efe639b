#!/bin/bash
# Crash isolation on a GPU host: a gpubenchd whose workers die of SIGSEGV
# inside any run of batch size 64 (GPUBENCH_INJECT_CRASH_AT_BATCH, the
# operator's test hook), and a CUDA sweep over 32, 64 and 128. The 64 point
# must fail with signal 11 and the others succeed in fresh workers that
# initialise CUDA again. Usage, after deploy/build.sh --bundle DIR -DCMAKE_BUILD_TYPE=Release
#   (the build the committed figures used; BUILD=build-wheel after FLAVOUR=wheel deploy/build.sh):
#   OUT=/tmp/faults bash bench/gpu_faults.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
export GPUBENCH_INJECT_CRASH_AT_BATCH=64
start_daemon "${PORT:-50078}" || exit 1
unset GPUBENCH_INJECT_CRASH_AT_BATCH
"$B/gpubench" submit --wait --workload resnet18 --device cuda --mode train --precision fp16 \
  --channels-last true --batch 32,64,128 --warmup 5 --min-iterations 50 --min-time-ms 1000 \
  --max-time-ms 4000 > "$OUT/crash.txt" 2> "$OUT/crash.err"
echo "submit exit $?"
cat "$OUT/crash.txt"
job=$("$B/gpubench" jobs --output csv | awk -F, 'NR==2 {print $1}')
"$B/gpubench" show "$job" --output json > "$OUT/crash.json"
python3 - "$OUT/crash.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
for r in job.get("runs", []):
    print(r["config"].get("batch_size"), r["state"], (r.get("error") or "")[:110])
PY
