# Shared by the bench/ scripts, sourced after `set -uo pipefail`: sets B (the
# binaries: $BUILD/bin, default build-bundle/bin) and OUT (default
# /tmp/gpubench-<script>, created), and defines start_daemon.
B=${BUILD:-build-bundle}/bin
OUT=${OUT:-/tmp/gpubench-$(basename "$0" .sh)}
mkdir -p "$OUT"

# Starts gpubenchd from $B on loopback with its data in $DATA (default
# $OUT/data), exports GPUBENCH_HOST for the CLI, stops the daemon on exit,
# and returns once the daemon answers. $DAEMON_ARGS go to gpubenchd.
start_daemon() {  # port
  export GPUBENCH_HOST=127.0.0.1:$1
  "$B/gpubenchd" --listen "$GPUBENCH_HOST" --data-dir "${DATA:-$OUT/data}" ${DAEMON_ARGS:-} \
    2> "$OUT/daemon.log" &
  daemon=$!
  trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
  for _ in $(seq 100); do "$B/gpubench" jobs > /dev/null 2>&1 && return 0; sleep 0.2; done
  echo "gpubenchd did not answer on $GPUBENCH_HOST; see $OUT/daemon.log" >&2
  return 1
}

# The labs (bench/lab_*.sh) share these. SMALL=1 plays a lab at CPU sizes;
# GPU (default: 1 where nvidia-smi lists a GPU) adds the GPU side.
SMALL=${SMALL:-0}
GPU=${GPU:-$(nvidia-smi -L > /dev/null 2>&1 && echo 1 || echo 0)}
FAILED=0

# gpubench submit --wait with the given arguments: its table to $OUT/TAG.txt
# (and printed), its runs as CSV to $OUT/TAG.csv; sets JOB to the job's id.
# Returns submit's exit code (1 when a run failed).
submit_job() {  # TAG, then submit's arguments
  local tag=$1 code
  shift
  "$B/gpubench" submit --wait "$@" > "$OUT/$tag.txt" 2> "$OUT/$tag.progress"
  code=$?
  JOB=$(awk 'NR == 1 && $1 == "job" { print $2 }' "$OUT/$tag.txt")
  [ -n "$JOB" ] && "$B/gpubench" show "$JOB" --output csv > "$OUT/$tag.csv"
  cat "$OUT/$tag.txt"
  [ "$code" = 0 ] || { echo "submit $tag: exit code $code" >&2; FAILED=$((FAILED + 1)); }
  return "$code"
}

# The run ids of the CSV's rows, in order, whose config label holds every
# given word ("cuda" takes "cuda:0").
run_ids() {  # CSV, then words
  python3 - "$@" << 'PY'
import csv, sys
for row in csv.DictReader(open(sys.argv[1])):
    words = row["config"].split() + [row["device"]]
    if all(any(x == w or x.startswith(w + ":") for x in words) for w in sys.argv[2:]):
        print(row["run_id"])
PY
}

# Counts a failure for each training run of the CSV whose loss did not fall
# from its first step to its last, or is not finite: a broken input pipeline
# or optimizer shows here before it shows anywhere else.
losses_fall() {  # CSV
  python3 - "$1" << 'PY' || FAILED=$((FAILED + 1))
import csv, math, sys
bad = 0
for r in csv.DictReader(open(sys.argv[1])):
    if not r["loss_first"]:
        continue
    first, last = float(r["loss_first"]), float(r["loss_last"])
    ok = math.isfinite(last) and last < first
    bad += not ok
    print(f'{r["config"]}: loss {first:.4g} > {last:.4g}{"" if ok else "  DID NOT FALL"}')
sys.exit(1 if bad else 0)
PY
}

# Counts a failure for each text the file lacks.
expect() {  # FILE, then texts
  local file=$1 text
  shift
  for text in "$@"; do
    grep -qF -- "$text" "$file" || { echo "MISSING in $file: $text" >&2; FAILED=$((FAILED + 1)); }
  done
}

# The lab's last line: what failed, and its exit code.
finish_lab() {
  if [ "$FAILED" = 0 ]; then echo "lab passed; files in $OUT"; else echo "lab FAILED: $FAILED checks" >&2; fi
  [ "$FAILED" = 0 ]
}

# A profiled job for the explain scripts (gpu_explain*.sh): submits it,
# keeps its progress in $OUT/NAME.txt, its run's explain in
# $OUT/NAME.explain.txt and its trace in $OUT/NAME.trace.json (a
# distributed run's: $OUT/NAME.rankR.trace.json, one a rank); sets JOB.
explained_job() {  # name, ranks, then submit's flags
  local name=$1 ranks=$2 run rank
  shift 2
  JOB=$("$B/gpubench" submit "$@" 2>> "$OUT/err")
  "$B/gpubench" watch "$JOB" > "$OUT/$name.txt" 2>> "$OUT/err"
  run=$("$B/gpubench" show "$JOB" --output json |
        python3 -c "import json,sys; print(json.load(sys.stdin)['runs'][0]['run_id'])")
  "$B/gpubench" explain "$run" > "$OUT/$name.explain.txt" 2>> "$OUT/err"
  if [ "$ranks" = 1 ]; then
    "$B/gpubench" trace "$run" -o "$OUT/$name.trace.json" >> "$OUT/err" 2>&1
    return
  fi
  for rank in $(seq 0 $((ranks - 1))); do
    "$B/gpubench" trace "$run" --rank "$rank" -o "$OUT/$name.rank$rank.trace.json" \
      >> "$OUT/err" 2>&1
  done
}
