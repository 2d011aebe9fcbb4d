#!/usr/bin/env bash
# Writes the packaged systemd unit to $1: deploy/systemd/vram_exporter.service (the one
# source) with the binary where packages put it, /usr/bin (/usr/local is the admin's).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: unit.sh OUTPUT}
sed 's|/usr/local/bin/vram_exporter|/usr/bin/vram_exporter|g' deploy/systemd/vram_exporter.service > "$out"
if ! grep -q '^ExecStart=/usr/bin/vram_exporter\( \|$\)' "$out"; then
  echo "deploy/systemd/vram_exporter.service: ExecStart is not /usr/local/bin/vram_exporter or /usr/bin/vram_exporter; update scripts/package/unit.sh" >&2
  exit 1
fi
