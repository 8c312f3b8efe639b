#!/bin/bash
# Issue 46 on a GPU host, after deploy/build.sh --bundle: the envelope the
# project ships (deploy/envelopes/v1.json) and qualify at level 1.
# SESSIONS sessions of `gpubench probe` (default 4), `gpubench fleet
# --envelope` over them, then `gpubench qualify` (a fresh session) against
# that envelope, and `qualify --latest` against the envelope compiled in.
# Writes $OUT/envelope-shipped.json (the envelope with its source naming
# this script, the GPU and the date) and prints the envelope's entries and
# each qualify's line and exit code.
# SHIP=1 then copies it to deploy/envelopes/v1.json, rebuilds the CLI and
# runs `gpubench qualify` (a fresh session) against the envelope compiled in.
# LEVEL=2 (or LEVEL2=1) last runs `gpubench qualify --level 2` (the suite,
# the bf16 product held for SUSTAIN, default 60s, on each GPU, and on two
# GPUs or more the pair matrix) against the envelope compiled in, and prints
# its checks and wall time; LEVEL=3 adds the product on every GPU at once
# for LOAD (default 15m). SESSIONS=0 with LEVEL runs that level alone.
# PAIR_SESSIONS=N (on two GPUs or more) adds N sessions of `qualify --level 2
# --sustain PAIR_SUSTAIN` (default 2s) before the envelope, so that it has the
# pair matrix's entries (peer_copy, peer_copy_kernel: 3 sessions needed).
# SHIP=merge adds to deploy/envelopes/v1.json only the entries it lacks.
# Usage: OUT=/tmp/qualify SESSIONS=4 [PAIR_SESSIONS=3] [SHIP=1|merge] [LEVEL=2|3] \
#   bash bench/gpu_qualify.sh
set -uo pipefail
source "$(dirname "$0")/lib.sh"  # B, OUT, start_daemon
start_daemon "${PORT:-50098}" || exit 1
LEVEL=${LEVEL:-$([ "${LEVEL2:-0}" = 1 ] && echo 2)}
held_level() {
  local t0=$SECONDS extra=()
  [ "$LEVEL" = 3 ] && extra=(--load "${LOAD:-15m}")
  "$B/gpubench" qualify --level "$LEVEL" --sustain "${SUSTAIN:-60s}" "${extra[@]}" \
    --textfile "$OUT/qualify$LEVEL.prom" > "$OUT/qualify$LEVEL.txt" 2> "$OUT/qualify$LEVEL.err"
  echo "qualify --level $LEVEL (the envelope compiled in, a fresh session): exit $?," \
    "$((SECONDS - t0)) s: $(cat "$OUT/qualify$LEVEL.txt")"
  cat "$OUT/qualify$LEVEL.err"
}
if [ "${SESSIONS:-4}" = 0 ] && [ "${PAIR_SESSIONS:-0}" = 0 ]; then
  [ -n "$LEVEL" ] && held_level
  exit 0
fi
for s in $(seq "${SESSIONS:-4}"); do
  "$B/gpubench" probe > "$OUT/probe$s.txt" 2> "$OUT/probe$s.err"
  echo "probe session $s: exit $?"
done
for s in $(seq "${PAIR_SESSIONS:-0}"); do
  t0=$SECONDS
  "$B/gpubench" qualify --level 2 --sustain "${PAIR_SUSTAIN:-2s}" > "$OUT/pairs$s.txt" \
    2> "$OUT/pairs$s.err"
  echo "qualify --level 2 session $s: exit $?, $((SECONDS - t0)) s: $(cat "$OUT/pairs$s.txt")"
done
"$B/gpubench" fleet --envelope "$OUT/envelope.json" > "$OUT/fleet.txt" 2> "$OUT/fleet.err"
echo "fleet --envelope: exit $? ($(grep envelope: "$OUT/fleet.err"))"
"$B/gpubench" qualify --envelope "$OUT/envelope.json" --textfile "$OUT/qualify.prom" \
  > "$OUT/qualify.txt" 2> "$OUT/qualify.err"
echo "qualify --envelope (a fresh session): exit $?: $(cat "$OUT/qualify.txt")"
"$B/gpubench" qualify --latest > "$OUT/qualify-shipped.txt" 2> "$OUT/qualify-shipped.err"
echo "qualify --latest (the envelope compiled in): exit $?: $(cat "$OUT/qualify-shipped.txt")"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
count=$(nvidia-smi -L | wc -l)
python3 - "$OUT/envelope.json" "$OUT/envelope-shipped.json" "$gpu" "$count" "${SESSIONS:-4}" "${PAIR_SESSIONS:-0}" << 'PY'
import datetime, json, sys
doc = json.load(open(sys.argv[1]))
day = datetime.date.today().isoformat()
for e in doc.get("probes", []):
    e["source"] = (f"bench/gpu_qualify.sh on {sys.argv[4]} x {sys.argv[3]} (device tool), "
                   f"{sys.argv[5]} sessions of gpubench probe and {sys.argv[6]} of qualify --level 2, "
                   f"gpubench fleet --envelope, {day}")
json.dump(doc, open(sys.argv[2], "w"), indent=2)
print(f"{'sku':24} {'driver':12} {'probe':14} {'median':>9} {'spread':>8} {'bound':>9} {'unit':8} sessions gpus")
for e in doc.get("probes", []):
    print(f"{e['sku'][:24]:24} {e.get('driver', ''):12} {e['probe']:14} {e['median']:9.4g} "
          f"{e['spread']:8.3g} {e['bound']:9.4g} {e['unit']:8} {e.get('sessions', 0):8} {e.get('gpus', 0):4}")
PY
cat "$OUT/qualify.err"
if [ "${SHIP:-0}" = merge ]; then
  python3 - "$OUT/envelope-shipped.json" deploy/envelopes/v1.json << 'PY'
import json, sys
new, path = json.load(open(sys.argv[1])), sys.argv[2]
doc = json.load(open(path))
key = lambda e: (e["sku"], e.get("driver", ""), e["probe"])
have = {key(e) for e in doc["probes"]}
added = [e for e in new.get("probes", []) if key(e) not in have]
doc["probes"] += added
open(path, "w").write(json.dumps(doc, indent=2) + "\n")
print("merged into", path + ":", ", ".join(e["probe"] for e in added) or "nothing")
PY
  cp deploy/envelopes/v1.json "$OUT/v1.json"
fi
if [ "${SHIP:-0}" = 1 ]; then
  cp "$OUT/envelope-shipped.json" deploy/envelopes/v1.json
fi
if [ "${SHIP:-0}" != 0 ]; then
  cmake --build "${BUILD:-build-bundle}" --target gpubench > "$OUT/ship-build.log" 2>&1 ||
    { tail -20 "$OUT/ship-build.log"; exit 1; }
  "$B/gpubench" qualify > "$OUT/qualify-ship.txt" 2> "$OUT/qualify-ship.err"
  echo "qualify (the envelope just compiled in, a fresh session): exit $?: $(cat "$OUT/qualify-ship.txt")"
  cat "$OUT/qualify-ship.err"
fi
[ -n "$LEVEL" ] && held_level
