#!/bin/sh
# `make install`: this machine's executable, the systemd unit, the configuration and the port-80 drop-in,
# for systems without Debian packages. Same layout as the .deb, under PREFIX (default /usr/local) for the
# executable and the drop-in.
# DESTDIR stages into a folder instead (then no user is created and systemd is left alone).
# An existing /etc/voice-hub/appsettings.json is kept; the shipped one is put beside it as .dist.
set -eu
cd "$(dirname "$0")/.."

PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
SYSTEMD_UNIT_DIR=${SYSTEMD_UNIT_DIR:-/etc/systemd/system}

# This machine's build: its arch, and Node 24 when its glibc loads that build's addon, else the Node 20
# legacy one (the choice of scripts/sea-runtime.mjs, which `make install` built).
key=$(${NODE:-node} --input-type=module -e "import { hostTarget } from './scripts/sea-runtime.mjs'; console.log(hostTarget())")
exe=dist/voice-hub-linux-$key
[ -x "$exe" ] || { echo "install: $exe is missing: run make binaries (or make install)" >&2; exit 1; }

install -d "$DESTDIR$PREFIX/bin" "$DESTDIR$SYSTEMD_UNIT_DIR" "$DESTDIR/etc/voice-hub"
install -m 0755 "$exe" "$DESTDIR$PREFIX/bin/voice-hub"
# The port-80 drop-in, for the admin to copy into voice-hub.service.d (docs/operations.md), as the .deb ships it.
install -d "$DESTDIR$PREFIX/share/voice-hub"
install -m 0644 systemd/port-80.conf "$DESTDIR$PREFIX/share/voice-hub/port-80.conf"
# Renamed into place: a rename replaces whatever is at the name. After `apt remove` of the package (or a
# `systemctl mask`) that is a link to /dev/null, which writing the unit and its chmod followed: /dev/null
# became 0644 for the rest of the boot, and `systemctl enable` refused the masked unit.
unit="$DESTDIR$SYSTEMD_UNIT_DIR/voice-hub.service"
rm -f "$unit.new"
sed "s|/usr/bin/voice-hub|$PREFIX/bin/voice-hub|" systemd/voice-hub.service >"$unit.new"
chmod 0644 "$unit.new"
mv -f "$unit.new" "$unit"

# The shipped configuration with the data dir systemd manages (as in the .deb).
config=$(mktemp)
trap 'rm -f "$config"' EXIT
node -e '
  const c = JSON.parse(require("fs").readFileSync("config/appsettings.json", "utf8"));
  c.Storage = { ...c.Storage, DataDir: "/var/lib/voice-hub" };
  process.stdout.write(JSON.stringify(c, null, 2) + "\n");' >"$config"
target="$DESTDIR/etc/voice-hub/appsettings.json"
if [ -e "$target" ]; then
  install -m 0640 "$config" "$target.dist"
  echo "kept $target; the shipped configuration is $target.dist"
else
  install -m 0640 "$config" "$target"
fi

if [ -n "$DESTDIR" ]; then
  echo "staged voice-hub in $DESTDIR"
  exit 0
fi

if ! getent passwd voice-hub >/dev/null; then
  useradd --system --user-group --home-dir /var/lib/voice-hub --no-create-home --shell /usr/sbin/nologin voice-hub
fi
chgrp voice-hub "$target" "$target.dist" 2>/dev/null || chgrp voice-hub "$target"
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  systemctl enable voice-hub.service
  systemctl restart voice-hub.service
  echo "voice-hub is running: systemctl status voice-hub; journalctl -u voice-hub"
else
  echo "installed $PREFIX/bin/voice-hub; systemd is not running here, so the unit was not started"
fi
