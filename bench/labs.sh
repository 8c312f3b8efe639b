#!/bin/bash
# The five labs of docs/labs.md, one after another, each its own daemon and
# data directory under $OUT/labN, each within its stated time bound (a lab
# past it is stopped and fails). Prints a table of each lab's exit code,
# time and bound; exits non-zero if any lab failed.
# Usage, in the checkout root after deploy/build.sh (BUILD=build) or
# deploy/build.sh --bundle DIR (the default, build-bundle):
#   OUT=/tmp/labs bash bench/labs.sh                 # a GPU host: full size
#   SMALL=1 BUILD=build bash bench/labs.sh           # a CPU: small sizes (CI)
#   LABS="4 5" OUT=/tmp/labs bash bench/labs.sh      # some of them
set -uo pipefail
here=$(dirname "$0")
OUT=${OUT:-/tmp/gpubench-labs}
mkdir -p "$OUT"
scripts=([1]=lab_starvation [2]=lab_cpu_gpu [3]=lab_unet_lstm [4]=lab_mixed_precision
         [5]=lab_inference)
# Seconds: docs/labs.md's bounds, small sizes on 2 CPU cores, full size on one H100.
if [ "${SMALL:-0}" = 1 ]; then
  bounds=([1]=120 [2]=180 [3]=120 [4]=120 [5]=180)
else
  bounds=([1]=120 [2]=180 [3]=180 [4]=120 [5]=420)
fi
summary=() failed=0
for lab in ${LABS:-1 2 3 4 5}; do
  start=$(date +%s)
  rm -rf "${OUT:?}/lab$lab"
  OUT=$OUT/lab$lab timeout --kill-after=10 "${bounds[$lab]}" \
    bash "$here/${scripts[$lab]}.sh" > "$OUT/lab$lab.log" 2>&1
  code=$?
  [ "$code" = 0 ] || failed=$((failed + 1))
  summary+=("$(printf '%-4s %-20s %4s %6ss %6ss' "$lab" "${scripts[$lab]}" "$code" \
    "$(($(date +%s) - start))" "${bounds[$lab]}")")
  [ "$code" = 0 ] && tail -n 1 "$OUT/lab$lab.log" || tail -n 20 "$OUT/lab$lab.log"
done
printf '%-4s %-20s %4s %7s %7s\n' lab script exit time bound
printf '%s\n' "${summary[@]}"
[ "$failed" = 0 ]
