#!/bin/sh
# Stops the service before its files go; an upgrade (deb "upgrade", rpm 1) keeps it.
set -e
case "$1" in
  remove|purge|0)
    if [ -d /run/systemd/system ]; then
      systemctl disable --now vram_exporter.service || true
    fi
    ;;
esac
