#!/bin/bash
# Fan-out at fleet size (issue 33): 100 hosts on loopback, 97 real
# gpubenchd and 3 bad ones (a port with nothing listening, a listener that
# takes the connection and never answers, a daemon that refuses the
# caller's missing token), in one fleet file; then the fleet-wide commands
# against all of them with --host-timeout T (default 5): wall time, the
# CLI's peak RSS, and what each says of the hosts. With JOBS=1 also the two
# that run a job on every host: `probe --small` (the suite at CPU sizes)
# and `compare --hosts` of a tiny spec over all of them.
# Usage: BUILD=build OUT=/tmp/fanout [HOSTS=100] [TIMEOUT=5] [JOBS=1] bash bench/fanout_bench.sh
set -uo pipefail
B=${BUILD:-build}/bin
OUT=${OUT:-/tmp/gpubench-fanout}
HOSTS=${HOSTS:-100}
T=${TIMEOUT:-5}
BASE=${BASE_PORT:-52000}
rm -rf "$OUT" && mkdir -p "$OUT"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT
live=$((HOSTS - 3))
echo "s3cret" > "$OUT/token"
start=$(date +%s.%N)
for i in $(seq 0 $((live - 1))); do
  "$B/gpubenchd" --listen "127.0.0.1:$((BASE + i))" --data-dir "$OUT/d$i" \
    2> "$OUT/d$i.log" & pids+=($!)
  # A few at a time: each probes LibTorch through a worker as it starts.
  [ $((i % 8)) = 7 ] && sleep 2
done
"$B/gpubenchd" --listen "127.0.0.1:$((BASE + live))" --data-dir "$OUT/locked" \
  --token-file "$OUT/token" 2> "$OUT/locked.log" & pids+=($!)
python3 -c "
import socket, time
s = socket.socket(); s.bind(('127.0.0.1', $((BASE + live + 1)))); s.listen(64)
time.sleep(3600)" & pids+=($!)
# BASE + live + 2: nothing listens there.
python3 - "$OUT/fleet.json" "$BASE" "$live" << 'PY'
import json, sys
path, base, live = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
hosts = [{"name": f"h{i:03d}", "address": f"127.0.0.1:{base + i}"} for i in range(live)]
hosts += [{"name": "locked", "address": f"127.0.0.1:{base + live}"},
          {"name": "slow", "address": f"127.0.0.1:{base + live + 1}"},
          {"name": "dead", "address": f"127.0.0.1:{base + live + 2}"}]
json.dump({"hosts": hosts}, open(path, "w"))
PY
export GPUBENCH_FLEET="$OUT/fleet.json"
unset GPUBENCH_HOST
# Every live daemon answering before the clock starts.
for _ in $(seq 120); do
  n=$("$B/gpubench" hosts --host-timeout 5 --output json 2>/dev/null |
      python3 -c "import json,sys; print(sum('host' in h for h in json.load(sys.stdin)))")
  [ "$n" = "$live" ] && break
  sleep 2
done
echo "$live daemons up after $(python3 -c "print(round($(date +%s.%N) - $start))") s;" \
     "their RSS: $(ps -o rss= -p "$(pgrep -d, gpubenchd)" |
       awk '{s+=$1; n++} END {printf "%.0f MiB in all, %.1f MiB each", s/1024, s/1024/n}')"
printf "%-12s %8s %10s %5s  %s\n" command wall_s cli_rss_mb exit hosts
cmds=("hosts" "regressions" "fleet")
if [ "${JOBS:-0}" = 1 ]; then
  every=$(python3 -c "import json; print(','.join(h['address'] for h in json.load(open('$OUT/fleet.json'))['hosts']))")
  cmds+=("probe --small"
         "compare --hosts $every --workload empty --device cpu --warmup 1 --min-iterations 5 --min-time-ms 10")
fi
for cmd in "${cmds[@]}"; do
  name=${cmd%% *}
  /usr/bin/time -f "%e %M" -o "$OUT/$name.time" "$B/gpubench" $cmd --host-timeout "$T" \
    > "$OUT/$name.out" 2> "$OUT/$name.err"
  code=$?
  read -r wall rss < <(tail -1 "$OUT/$name.time")
  printf "%-12s %8s %10.1f %5s  %s\n" "$name" "$wall" "$(echo "$rss / 1024" | bc -l)" "$code" \
    "$(grep -E '[0-9]+ of [0-9]+ hosts? answered' "$OUT/$name.err" | head -1)"
done
