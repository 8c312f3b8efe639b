#!/bin/bash
# Export at fleet size (issue 33): DAEMONS gpubenchd on loopback, each with
# JOBS jobs of RUNS real runs (the `empty` workload, a run a worker process),
# then `gpubench export` of every run as JSON Lines (read back by DuckDB) and
# twice into a real PostgreSQL server (the second must add nothing): wall
# time, the CLI's peak RSS, rows.
# Needs Debian's postgresql package and Python's duckdb (deploy/test.sh
# installs both).
# Usage: BUILD=build OUT=/tmp/export [DAEMONS=10] [JOBS=5] [RUNS=200] bash bench/export_bench.sh
set -uo pipefail
B=$(realpath "${BUILD:-build}")/bin
OUT=${OUT:-/tmp/gpubench-export}
DAEMONS=${DAEMONS:-10}
JOBS=${JOBS:-5}
RUNS=${RUNS:-200}
BASE=${BASE_PORT:-53000}
rm -rf "$OUT" && mkdir -p "$OUT/pg"
pids=()
pgbin=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
as=""
[ "$(id -u)" = 0 ] && { as="runuser -u postgres --"; chown postgres "$OUT/pg"; }
cleanup() {
  kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null
  $as "$pgbin/pg_ctl" -D "$OUT/pg/data" -m immediate stop >/dev/null 2>&1
}
trap cleanup EXIT
$as "$pgbin/initdb" -A trust -U gpubench -D "$OUT/pg/data" > "$OUT/initdb.log" 2>&1
$as "$pgbin/pg_ctl" -w -D "$OUT/pg/data" -l "$OUT/pg/log" \
  -o "-k $OUT/pg -p 5432 -c listen_addresses=''" start > /dev/null
url="postgresql://gpubench@/postgres?host=$OUT/pg&port=5432"
hosts=()
for i in $(seq 0 $((DAEMONS - 1))); do
  "$B/gpubenchd" --listen "127.0.0.1:$((BASE + i))" --data-dir "$OUT/d$i" 2> "$OUT/d$i.log" &
  pids+=($!)
  hosts+=(--host "127.0.0.1:$((BASE + i))")
done
sleep 3
start=$(date +%s.%N)
batches=$(seq -s, 1 "$RUNS")
# Every job queued first (a submit that fails is tried again), then waited
# for: a daemon runs its jobs one after another.
for i in $(seq 0 $((DAEMONS - 1))); do
  for j in $(seq "$JOBS"); do
    for try in 1 2 3 4 5; do
      "$B/gpubench" submit --host "127.0.0.1:$((BASE + i))" --workload empty --device cpu \
        --batch "$batches" --warmup 0 --min-iterations 1 --min-time-ms 0 \
        >> "$OUT/seed.log" 2>&1 && break
      sleep 1
    done
  done
done
for i in $(seq 0 $((DAEMONS - 1))); do
  while true; do
    left=$("$B/gpubench" jobs --host "127.0.0.1:$((BASE + i))" --state queued --state running \
             --output json 2>/dev/null)
    [[ "$left" == *job_id* ]] || break
    sleep 5
  done
done
echo "seeded $DAEMONS daemons x $JOBS jobs x $RUNS runs in" \
     "$(python3 -c "print(round($(date +%s.%N) - $start))") s"
printf "%-22s %8s %10s %5s  %s\n" step wall_s cli_rss_mb exit said
step() {
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$OUT/$name.time" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  local code=$?
  read -r wall rss < <(tail -1 "$OUT/$name.time")
  printf "%-22s %8s %10.1f %5s  %s\n" "$name" "$wall" "$(echo "$rss / 1024" | bc -l)" "$code" \
    "$(grep -E '^exported' "$OUT/$name.err" | head -1)"
}
step jsonl "$B/gpubench" export "${hosts[@]}"
echo "jsonl lines: $(wc -l < "$OUT/jsonl.out"), $(du -m "$OUT/jsonl.out" | cut -f1) MB"
python3 -c "
import duckdb, time
t = time.time()
n, hosts, runs = duckdb.sql(\"SELECT count(*), count(DISTINCT host), count(DISTINCT run_id) FROM read_json_auto('$OUT/jsonl.out')\").fetchall()[0]
print(f'duckdb read_json_auto: {n} rows, {hosts} hosts, {runs} distinct run ids in {time.time() - t:.2f} s')"
step postgresql_first "$B/gpubench" export "${hosts[@]}" --to "$url"
step postgresql_again "$B/gpubench" export "${hosts[@]}" --to "$url"
echo "postgresql rows: $(psql -X -At "$url" -c 'SELECT count(*) FROM gpubench_runs')"
