#!/bin/bash
# The compiled rows of bench/side_by_side.sh (issue 18) measured side by side
# in one call. Each row compiles twice before it measures (AOTInductor through
# gpubench, torch.compile in the Python reference), 1-2 minutes a side, so
# the rows do not fit one device call's 10 minutes serially. Two phases:
#   prepare  every row at once (JOBS at a time), each through its own daemon
#            and a short measurement, to fill the caches: the AOT packages go
#            to $CACHE/data/aot-cache, Python's Inductor cache to
#            $CACHE/inductor. Its figures are not the measurement.
#   measure  the same rows one after another, through one daemon on
#            $CACHE/data (each package found in the cache, compile time 0)
#            and the reference with the warm Inductor cache: the table.
# Usage, in the checkout root of a GPU host after deploy/build.sh --bundle DIR
# -DCMAKE_BUILD_TYPE=Release, the two phases in consecutive calls on one machine:
#   OUT=/tmp/cr bash bench/gpu_compiled_rows.sh prepare
#   OUT=/tmp/cr bash bench/gpu_compiled_rows.sh measure
# ONLY (a regex of case names) picks the rows; MIN_MS, MAX_MS and REPEAT pass on.
set -uo pipefail
phase=${1:?usage: gpu_compiled_rows.sh prepare|measure}
OUT=${OUT:-/tmp/gpubench-compiled-rows}
CACHE=$(realpath -m "${CACHE:-${BUILD:-build-bundle}/compiled-rows}")
export ONLY=${ONLY:-'_aot|_vs_compile$|^r50_infer_bs256_fp16_cl$|^r50_train_bs256_fp16_cl$'}
export TORCHINDUCTOR_CACHE_DIR=$CACHE/inductor
script=$(dirname "$0")/side_by_side.sh
mkdir -p "$OUT" "$CACHE/data/aot-cache" "$TORCHINDUCTOR_CACHE_DIR"
mapfile -t rows < <(sed -n 's/^case_ \([a-z0-9_]*\) .*/\1/p' "$script" | grep -E "$ONLY")

case $phase in
prepare)
  port=50200
  mkdir -p "$OUT/prepare"
  for row in "${rows[@]}"; do
    [[ $row =~ _aot|compile ]] || continue  # an eager row has nothing to cache
    while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-5}" ]; do wait -n; done
    port=$((port + 1))
    echo "== prepare $row" >&2
    ONLY="^$row\$" PORT=$port OUT="$OUT/prepare/$row" MIN_MS=200 MAX_MS=500 \
      bash "$script" > "$OUT/prepare/$row.txt" 2>&1 &
  done
  wait
  cp -n "$OUT"/prepare/*/data/aot-cache/*.pt2 "$CACHE/data/aot-cache/" 2>/dev/null
  echo "packages in $CACHE/data/aot-cache:"
  ls -l "$CACHE/data/aot-cache"
  grep -h -A30 '^case ' "$OUT"/prepare/*.txt | grep -v '^case ' | sort
  ;;
measure)
  ls "$CACHE"/data/aot-cache/*.pt2 > /dev/null 2>&1 ||
    { echo "no packages in $CACHE/data/aot-cache: run the prepare phase first" >&2; exit 1; }
  DATA=$CACHE/data bash "$script"
  echo
  echo "compile, as each gpubench job reported it:"
  grep -H -o 'compiled[^|]*' "$OUT"/*.gpubench.txt | sed 's|.*/||'
  ;;
*)
  echo "usage: gpu_compiled_rows.sh prepare|measure" >&2
  exit 2
  ;;
esac
