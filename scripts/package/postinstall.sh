#!/bin/sh
# Runs after the .deb/.rpm is unpacked: the service user and the push group, then systemd.
# deb passes "configure" (with the old version on upgrade), rpm 1 (install) or 2 (upgrade).
set -e
case "$1" in
  configure|1|2) ;;
  *) exit 0 ;;
esac

# Serving users join vram-push to push allocator stats (the unit's --push.socket-group).
if ! getent group vram-push >/dev/null; then
  groupadd --system vram-push
fi
if ! getent passwd vram_exporter >/dev/null; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin --comment "vram_exporter daemon" vram_exporter
fi

# /run/vram_exporter is the unit's RuntimeDirectory: systemd makes it at every start,
# owned by the service, so the package ships no directory there.
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  if [ "$1" = 1 ] || { [ "$1" = configure ] && [ -z "$2" ]; }; then
    systemctl enable --now vram_exporter.service
  else
    systemctl try-restart vram_exporter.service
  fi
fi
