#!/bin/bash
# deploy/install.sh staged under a temporary DESTDIR: the binaries, the unit
# and the config land where the unit expects them; the staged binaries run;
# the unit passes `systemd-analyze verify` (pointed at the staged binary) with
# nothing said; and the shipped config starts a daemon.
#   install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
pid=""
DESTDIR=$tmp/root PREFIX=/usr/local "$src/deploy/install.sh" "$build"
root=$tmp/root
for f in usr/local/bin/gpubenchd usr/local/bin/gpubench-worker usr/local/bin/gpubench \
         usr/local/share/gpubench/python/gpubench_models/aot.py \
         usr/local/share/gpubench/python/gpubench_models/models.py \
         usr/local/share/gpubench/python/gpubench_models/lm.py \
         usr/local/share/gpubench/python/gpubench_models/lm_aot.py \
         etc/systemd/system/gpubenchd.service etc/gpubench/gpubenchd.conf; do
  [ -e "$root/$f" ] || fail "$f not installed"
done
"$root/usr/local/bin/gpubench" --version | grep -q "^gpubench " || fail "staged gpubench does not run"
unit=$root/etc/systemd/system/gpubenchd.service
grep -q '^ExecStart=/usr/local/bin/gpubenchd --config /etc/gpubench/gpubenchd.conf$' "$unit" ||
  fail "ExecStart: $(grep ExecStart "$unit")"
for directive in User=gpubench StateDirectory=gpubench ProtectSystem=strict NoNewPrivileges=yes \
                 PrivateTmp=yes CapabilityBoundingSet=; do
  grep -qx "$directive" "$unit" || fail "$directive missing"
done
grep -qE '^(PrivateDevices|DeviceAllow|ProtectClock)=' "$unit" && fail "a directive that closes /dev/nvidia*"
if command -v systemd-analyze >/dev/null; then
  sed "s|^ExecStart=/usr/local/bin/|ExecStart=$root/usr/local/bin/|" "$unit" > "$tmp/gpubenchd.service"
  out=$(systemd-analyze verify "$tmp/gpubenchd.service" 2>&1) || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify said: $out"
  echo "systemd-analyze verify: clean"
else
  fail "no systemd-analyze (Debian's systemd package)"
fi
# The shipped config, with a private data directory and a free port.
sed 's/^listen = .*/listen = 127.0.0.1:0/; s/^metrics-listen = .*/metrics-listen = 127.0.0.1:0/' \
  "$root/etc/gpubench/gpubenchd.conf" > "$tmp/gpubenchd.conf"
"$root/usr/local/bin/gpubenchd" --config "$tmp/gpubenchd.conf" --data-dir "$tmp/data" \
  --port-file "$tmp/port" 2> "$tmp/daemon.log" &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ "$(wc -l < "$tmp/port")" = 2 ] || fail "the shipped config did not start a daemon with metrics: $(cat "$tmp/daemon.log")"
echo "ok: staged install, unit verified, shipped config serves"
