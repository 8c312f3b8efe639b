#!/bin/bash
# Installs a built gpubench as a systemd service (run as root):
#   deploy/install.sh [BUILD_DIR]     (default: the first of build-bundle, build-wheel, build)
# puts gpubenchd, gpubench-worker and gpubench in $PREFIX/bin (/usr/local), the
# models' Python twins (execution aot) in $PREFIX/share/gpubench/python, the
# hardened unit in /etc/systemd/system, a starting config in
# /etc/gpubench/gpubenchd.conf (kept if present), creates the system user
# gpubench (groups video and render where they exist: /dev/nvidia* on sites
# that restrict them), and enables and starts the service.
# DESTDIR=DIR stages the files under DIR instead and stops there: no user, no
# systemctl (CI checks the staged tree with systemd-analyze).
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
build=${1:-}
if [ -z "$build" ]; then
  for d in build-bundle build-wheel build; do [ -x "$d/bin/gpubenchd" ] && { build=$d; break; }; done
fi
[ -n "$build" ] && [ -x "$build/bin/gpubenchd" ] || { echo "no built gpubenchd: run deploy/build.sh first" >&2; exit 2; }
if [ -z "$DESTDIR" ] && [ "$(id -u)" != 0 ]; then echo "run as root (or set DESTDIR)" >&2; exit 2; fi
install -d "$DESTDIR$PREFIX/bin" "$DESTDIR/etc/systemd/system" "$DESTDIR/etc/gpubench"
for bin in gpubenchd gpubench-worker gpubench; do
  install -m 0755 "$build/bin/$bin" "$DESTDIR$PREFIX/bin/$bin"
done
# The models' Python twins, which --execution aot compiles; the worker looks
# for them in share/gpubench/python beside its bin/.
install -d "$DESTDIR$PREFIX/share/gpubench/python/gpubench_models"
install -m 0644 worker/python/gpubench_models/*.py "$DESTDIR$PREFIX/share/gpubench/python/gpubench_models/"
sed "s|^ExecStart=/usr/local/bin/gpubenchd|ExecStart=$PREFIX/bin/gpubenchd|" deploy/gpubenchd.service \
  > "$DESTDIR/etc/systemd/system/gpubenchd.service"
chmod 0644 "$DESTDIR/etc/systemd/system/gpubenchd.service"
conf=$DESTDIR/etc/gpubench/gpubenchd.conf
if [ ! -e "$conf" ]; then
  cat > "$conf" <<'CONF'
# gpubenchd settings, "name = value" (gpubenchd --help lists them). Loopback
# only until TLS and tokens are set (docs/security.md).
listen = 127.0.0.1:50051
metrics-listen = 127.0.0.1:9400
CONF
  chmod 0640 "$conf"
fi
echo "installed $build into ${DESTDIR:-/}"
[ -z "$DESTDIR" ] || exit 0
if ! id gpubench >/dev/null 2>&1; then
  groups=$(for g in video render; do getent group "$g" >/dev/null && printf '%s,' "$g"; done)
  useradd --system --home-dir /var/lib/gpubench --shell /usr/sbin/nologin \
    ${groups:+--groups "${groups%,}"} gpubench
fi
chgrp gpubench "$conf"
systemctl daemon-reload
systemctl enable --now gpubenchd
systemctl --no-pager status gpubenchd | head -5
