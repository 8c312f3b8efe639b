# Shared by the bench/ scripts: starts gpubenchd from $B on loopback with its
# data under $OUT, exports GPUBENCH_HOST for the CLI, stops the daemon on exit,
# and returns once the daemon answers. $DAEMON_ARGS go to gpubenchd.
start_daemon() {  # port
  export GPUBENCH_HOST=127.0.0.1:$1
  "$B/gpubenchd" --listen "$GPUBENCH_HOST" --data-dir "$OUT/data" ${DAEMON_ARGS:-} \
    2> "$OUT/daemon.log" &
  daemon=$!
  trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
  for _ in $(seq 100); do "$B/gpubench" jobs > /dev/null 2>&1 && return 0; sleep 0.2; done
  echo "gpubenchd did not answer on $GPUBENCH_HOST; see $OUT/daemon.log" >&2
  return 1
}
