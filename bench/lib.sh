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
