#!/bin/sh
# The user and group stay after removal (files they own may remain elsewhere, as Debian
# does for system users); systemd forgets the unit.
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
