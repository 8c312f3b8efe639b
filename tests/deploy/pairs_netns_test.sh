#!/bin/bash
# qualify --pairs across four real daemons, each in a network namespace of
# its own on one bridge, host c's link held to 200 Mbit/s both ways by tc's
# tbf, host d without --pair-address: the CLI exits 1, failing c by its
# fastest link and d for having no pair that ran (its pairs refused naming
# the flag), while a, b and the a-b link pass. Four hosts run in three
# rounds of two pairs at once. The bridge and the CLI live in a fourth namespace (the hub),
# so nothing touches the host's network. Needs root and `ip netns`: exit 77
# (a skip) without them.
#   pairs_netns_test.sh BIN_DIR SCRATCH_DIR   (BIN_DIR: gpubenchd, gpubench, gpubench-worker)
set -euo pipefail
bin=$1 scratch=$2
hosts=(a b c d)
declare -A ns pid
for h in "${hosts[@]}" hub; do ns[$h]=gpubench-pairs-$$-$h; done

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
show_logs() {
  local h
  for h in "${hosts[@]}"; do
    [ -f "$scratch/$h.log" ] || continue
    echo "--- gpubenchd $h (tail)" >&2
    tail -n 30 "$scratch/$h.log" >&2
  done
}

[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, tc)"
if ! command -v ip > /dev/null || ! command -v tc > /dev/null; then skip "needs iproute2 (ip, tc)"; fi
command -v python3 > /dev/null || skip "needs python3"
for f in gpubenchd gpubench gpubench-worker; do [ -x "$bin/$f" ] || fail "no $bin/$f"; done

# Always: the daemons (and any worker they left, which would keep its
# namespace alive), then the namespaces, which take the bridge and veths.
cleanup() {
  local rc=$? h p alive
  trap - EXIT
  for h in "${!pid[@]}"; do kill -TERM "${pid[$h]}" 2> /dev/null || true; done
  for _ in $(seq 50); do
    alive=0
    for h in "${!pid[@]}"; do kill -0 "${pid[$h]}" 2> /dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.2
  done
  for h in "${!pid[@]}"; do kill -KILL "${pid[$h]}" 2> /dev/null || true; done
  for h in "${!ns[@]}"; do
    for p in $(ip netns pids "${ns[$h]}" 2> /dev/null); do kill -KILL "$p" 2> /dev/null || true; done
    ip netns del "${ns[$h]}" 2> /dev/null || true
  done
  if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then show_logs; fi
  exit "$rc"
}
rm -rf "${scratch:?}"
mkdir -p "$scratch"
trap cleanup EXIT
trap 'exit 143' TERM INT

# A host that cannot build the network (no netns, veth, bridge or tbf, as in
# an unprivileged container) skips: nothing of gpubench's is tested yet.
net() {
  "$@" 2>> "$scratch/net.log" || skip "cannot build the test network: $* ($(tail -n 1 "$scratch/net.log"))"
}
net ip netns add "${ns[hub]}"
net ip -n "${ns[hub]}" link set lo up
net ip -n "${ns[hub]}" link add br0 type bridge
net ip -n "${ns[hub]}" addr add 10.77.0.254/24 dev br0
net ip -n "${ns[hub]}" link set br0 up
for i in 0 1 2 3; do
  h=${hosts[$i]}
  net ip netns add "${ns[$h]}"
  # Made in the hub with its peer put straight into the host's namespace:
  # neither end ever appears in the root namespace.
  net ip -n "${ns[hub]}" link add "to-$h" type veth peer name eth0 netns "${ns[$h]}"
  net ip -n "${ns[hub]}" link set "to-$h" master br0 up
  net ip -n "${ns[$h]}" addr add "10.77.0.$((i + 1))/24" dev eth0
  net ip -n "${ns[$h]}" link set eth0 up
  net ip -n "${ns[$h]}" link set lo up
done
# tbf shapes what a device sends: c's own end limits c -> hub, the hub's end
# hub -> c. (netem and prio are not in this CI kernel; tbf is.)
tbf=(root tbf rate 200mbit burst 64kb latency 50ms)
net ip netns exec "${ns[c]}" tc qdisc add dev eth0 "${tbf[@]}"
net ip netns exec "${ns[hub]}" tc qdisc add dev to-c "${tbf[@]}"

# The CLI names hosts through a fleet file (--host takes a name or HOST:PORT).
fleet=()
for i in 0 1 2 3; do
  fleet+=("{\"name\": \"${hosts[$i]}\", \"address\": \"10.77.0.$((i + 1)):50051\"}")
done
(IFS=,; echo "{\"hosts\": [${fleet[*]}]}") > "$scratch/fleet.json"
export GPUBENCH_FLEET=$scratch/fleet.json
# gRPC would dial through a proxy named in the environment; none is in the hub.
unset GPUBENCH_HOST http_proxy https_proxy grpc_proxy HTTP_PROXY HTTPS_PROXY

# --insecure: a non-loopback --listen needs TLS and a token file, or this
# (and the CLI sends no token in plaintext); the bridge is the test's own.
# Without a token file every caller is admin, which RunHostPair needs.
# --stop-grace-ms: a quick cleanup. d runs no pair (no --pair-address).
for i in 0 1 2 3; do
  h=${hosts[$i]} addr=10.77.0.$((i + 1))
  pair=(--pair-address "$addr:29500")
  [ "$h" = d ] && pair=()
  ip netns exec "${ns[$h]}" "$bin/gpubenchd" --listen "$addr:50051" --insecure \
    --data-dir "$scratch/$h" --worker "$bin/gpubench-worker" "${pair[@]}" \
    --stop-grace-ms 1000 --verbose > "$scratch/$h.log" 2>&1 &
  pid[$h]=$!
done
hub() { ip netns exec "${ns[hub]}" "$@"; }

# Each daemon answers across the bridge, from where the CLI will run.
deadline=$((SECONDS + 60))
until hub "$bin/gpubench" hosts --host a --host b --host c --host d --host-timeout 2 \
      > "$scratch/hosts.txt" 2>&1; do
  for h in "${hosts[@]}"; do kill -0 "${pid[$h]}" 2> /dev/null || fail "gpubenchd $h exited"; done
  [ "$SECONDS" -lt "$deadline" ] ||
    fail "the daemons did not all answer from the hub within 60 s: $(cat "$scratch/hosts.txt")"
  sleep 0.5
done
echo "4 daemons answer: a 10.77.0.1, b 10.77.0.2, c 10.77.0.3 (200 Mbit/s), d 10.77.0.4 (no pairs)"

# Bounded here: ctest's TIMEOUT kills without this script's cleanup.
code=0
start=$SECONDS
hub timeout 150 "$bin/gpubench" qualify --pairs --host a --host b --host c --host d --output json \
  > "$scratch/qualify.json" 2> "$scratch/qualify.err" || code=$?
echo "qualify --pairs: exit $code in $((SECONDS - start)) s"

if ! python3 - "$scratch/qualify.json" "$code" << 'EOF'; then
import json
import sys

path, code = sys.argv[1], int(sys.argv[2])
text = open(path).read()
try:
    doc = json.loads(text)
except ValueError as e:
    sys.exit(f"qualify's stdout is not JSON ({e}): {text[:2000]!r}")
checks = doc.get("checks", [])
print(doc.get("status"))
row = "{:<6} {:<10} {:<10} {:<7} {:>9} {:<5} {}"
print(row.format("host", "device", "probe", "check", "figure", "unit", "why"))
for c in checks:
    print(row.format(c["host"], c["device"], c["probe"], c["outcome"], f'{c["value"]:.3f}',
                     c["unit"], c["why"]))


def link(c):
    # A pair's check is its opener's, device "cpu -> b"; a host's has no arrow.
    if " -> " in c["device"]:
        return frozenset((c["host"], c["device"].rsplit(" -> ", 1)[1]))
    return None


pairs = {link(c): c for c in checks if c["probe"] == "host_pair" and link(c)}
best = {c["host"]: c for c in checks if c["probe"] == "host_pair" and not link(c)}
ab, ac, bc = frozenset({"a", "b"}), frozenset({"a", "c"}), frozenset({"b", "c"})
with_d = [frozenset({h, "d"}) for h in "abc"]
problems = []


def want(ok, what):
    if not ok:
        problems.append(what)


want(code == 1, f"exit {code}, not 1 (a host fails)")
want(doc.get("outcome") == "fail", f"outcome {doc.get('outcome')!r}, not 'fail'")
want(set(pairs) == {ab, ac, bc, *with_d},
     f"pair checks {sorted(sorted(p) for p in pairs)}, not the six of a, b, c and d")
want(set(best) == {"a", "b", "c", "d"}, f"host checks {sorted(best)}, not a, b, c and d")
if set(pairs) == {ab, ac, bc, *with_d} and set(best) == {"a", "b", "c", "d"}:
    # d's pairs were refused, naming the flag, and d fails for it.
    for p in with_d:
        want(pairs[p]["outcome"] == "fail" and "--pair-address" in pairs[p]["why"],
             f"{'-'.join(sorted(p))}: {pairs[p]['outcome']} ({pairs[p]['why']})")
    want(best["d"]["outcome"] == "fail" and "no pair with this host ran" in best["d"]["why"],
         f"host d: {best['d']['outcome']} ({best['d']['why']})")
    # Every pair ran: c must fail by its figures, not for a pair missing.
    for p in (ab, ac, bc):
        want(pairs[p]["outcome"] == "pass",
             f"{'-'.join(sorted(p))}: {pairs[p]['outcome']} ({pairs[p]['why']})")
    fast = pairs[ab]["value"]
    for p in (ac, bc):
        want(fast > 2 * pairs[p]["value"],
             f"a-b {fast} GB/s is not above twice {'-'.join(sorted(p))}'s "
             f"{pairs[p]['value']} GB/s")
    for h in ("a", "b"):
        want(best[h]["outcome"] == "pass", f"host {h}: {best[h]['outcome']} ({best[h]['why']})")
    c = best["c"]
    fastest = max((ac, bc), key=lambda p: pairs[p]["value"])
    other = next(iter(fastest - {"c"}))
    want(c["outcome"] == "fail", f"host c: {c['outcome']}, not fail ({c['why']})")
    want("fastest link" in c["why"] and f"with {other}" in c["why"],
         f"host c's why does not name its fastest link (with {other}): {c['why']!r}")
    want(abs(c["value"] - pairs[fastest]["value"]) <= 1e-3 * pairs[fastest]["value"],
         f"host c's figure {c['value']}, not its fastest link's {pairs[fastest]['value']}")
for p in problems:
    print("FAIL:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
  echo "--- qualify's stderr (tail)" >&2
  tail -n 30 "$scratch/qualify.err" >&2
  fail "qualify --pairs did not find c's rate-limited link (above)"
fi
echo "ok: c's 200 Mbit/s link failed it, d's missing --pair-address failed it; a, b and a-b passed"
