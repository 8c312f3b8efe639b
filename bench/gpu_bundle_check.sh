#!/bin/bash
# The offline path on a GPU host (issue 17): a fresh copy of the checkout is
# built with deploy/build.sh --bundle (packages from deploy/bundle.sh, the
# host's PyTorch wheel), its binaries report their versions, the smoke test's
# matmul and resnet50 cases run through daemon, CLI and worker, and the
# daemon's /metrics is read while a GPU job runs and after.
# Usage, in the checkout root of a GPU host, with the bundle beside it:
#   BUNDLE=bundle OUT=/tmp/bundle-check bash bench/gpu_bundle_check.sh
set -uo pipefail
OUT=${OUT:-/tmp/bundle-check}
BUNDLE=$(cd "${BUNDLE:-bundle}" && pwd)
here=$(pwd)
mkdir -p "$OUT"
fresh=$OUT/fresh
rm -rf "$fresh" && mkdir -p "$fresh"
# Everything but build output, the bundle and local state.
tar -C "$here" --exclude='./build*' --exclude='./bundle' --exclude='./.gpu' --exclude='./.git' \
  -cf - . | tar -C "$fresh" -xf -
cd "$fresh"
start=$(date +%s)
bash deploy/build.sh --bundle "$BUNDLE" > "$OUT/build.log" 2>&1
build_rc=$?
build_s=$(( $(date +%s) - start ))
echo "build: exit $build_rc in ${build_s} s (log $OUT/build.log)"
[ $build_rc -eq 0 ] || { tail -30 "$OUT/build.log"; exit 1; }
B=build-bundle/bin
for bin in gpubenchd gpubench-worker gpubench; do "$B/$bin" --version; done
echo "libraries from the bundle:"
ldd "$B/gpubenchd" | grep -E "grpc|httplib|absl_base|sqlite|ssl" | sed 's/^/  /'
fetch() {  # URL: the body (python3, as curl may be missing)
  python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "$1"
}
source bench/lib.sh
DAEMON_ARGS="--metrics-listen 127.0.0.1:9400" start_daemon 50078 || exit 1
# A matmul that measures for 8 s; /metrics is read in the middle of it.
"$B/gpubench" submit --wait --workload matmul --device cuda --matmul-size 8192 --precision bf16 \
  --warmup 20 --min-iterations 50 --min-time-ms 8000 --max-time-ms 8000 > "$OUT/matmul.txt" 2>&1 &
sub=$!
sleep 6
fetch http://127.0.0.1:9400/metrics > "$OUT/metrics-during.txt"
wait $sub
echo "matmul (exit $?):"; cat "$OUT/matmul.txt"
"$B/gpubench" submit --wait --workload resnet50 --device cuda --batch 32 --mode infer \
  --precision fp16 --channels-last true --execution eager,cuda_graph \
  --warmup 20 --min-iterations 50 --min-time-ms 1000 --max-time-ms 4000 > "$OUT/resnet50.txt" 2>&1
echo "resnet50 (exit $?):"; cat "$OUT/resnet50.txt"
fetch http://127.0.0.1:9400/metrics > "$OUT/metrics-after.txt"
echo "HTML view: $(fetch http://127.0.0.1:9400/ | grep -c 'href="jobs/') job links"
echo "metrics during the matmul:"
grep -E "^(DCGM_FI_DEV_(GPU_UTIL|POWER_USAGE|SM_CLOCK|GPU_TEMP|FB_USED)|gpubench_gpu_telemetry_available|gpubench_jobs_running)" \
  "$OUT/metrics-during.txt" | sed 's/^/  /'
echo "metrics after:"
grep -E "^(gpubench_runs_total|gpubench_last_throughput|gpubench_queue_depth|gpubench_build_info)" \
  "$OUT/metrics-after.txt" | sed 's/^/  /'
