#!/bin/bash
# The shipped systemd unit runs gpubenchd as an unprivileged user, never as
# root, and systemd accepts it (when systemd-analyze is installed).
set -euo pipefail
unit="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
user=$(sed -n 's/^User=//p' "$unit")
[ -n "$user" ] || fail "no User= line: the daemon would run as root"
[ "$user" != root ] && [ "$user" != 0 ] || fail "User=$user"
grep -q '^NoNewPrivileges=yes' "$unit" || fail "NoNewPrivileges=yes missing"
grep -q '^CapabilityBoundingSet=$' "$unit" || fail "capabilities are not dropped"
if command -v systemd-analyze >/dev/null; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # verify needs the binary the unit names; point it at a stand-in.
  sed "s|^ExecStart=[^ ]*|ExecStart=/bin/true|" "$unit" > "$tmp/gpubenchd.service"
  out=$(systemd-analyze verify "$tmp/gpubenchd.service" 2>&1 || true)
  echo "$out" | grep -iE "unknown|invalid|failed to parse" && fail "systemd-analyze: $out"
fi
echo "ok: User=$user"
