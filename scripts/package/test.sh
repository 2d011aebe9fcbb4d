#!/usr/bin/env bash
# CI's packaging check (as root, on Debian): builds the snapshot .deb for linux/amd64,
# installs it with dpkg -i, runs the installed vram_exporter --version and
# systemd-analyze verify on the installed unit, checks the postinstall made the user and
# group, then purges the package and removes what the install added, so the machine is
# left as it was.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$(id -u)" != 0 ]; then
  echo "scripts/package/test.sh installs a package: run it as root" >&2
  exit 1
fi
if dpkg-query -W -f '${Status}' vram-exporter 2>/dev/null | grep -q installed; then
  echo "vram-exporter is installed on this machine already; remove it (dpkg -P vram-exporter) before testing the package" >&2
  exit 1
fi
if ! command -v systemd-analyze >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd
fi

had_user=$(getent passwd vram_exporter >/dev/null && echo yes || echo no)
had_group=$(getent group vram-push >/dev/null && echo yes || echo no)
cleanup() {
  dpkg -P vram-exporter >/dev/null 2>&1 || true
  if [ "$had_user" = no ] && getent passwd vram_exporter >/dev/null; then userdel vram_exporter; fi
  if [ "$had_group" = no ] && getent group vram-push >/dev/null; then groupdel vram-push; fi
  rm -rf build/package dist/vram-exporter_*.deb
  rmdir build dist 2>/dev/null || true
}
trap cleanup EXIT

GOARCH=amd64 bash scripts/package/build.sh deb
deb=$(ls dist/vram-exporter_*_amd64.deb)
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
dpkg-deb --contents "$deb"

echo "== dpkg -i $deb"
dpkg -i "$deb"

echo "== vram_exporter --version"
out=$(/usr/bin/vram_exporter --version 2>&1)
echo "$out"
revision=$(git rev-parse HEAD 2>/dev/null || true)
grep -q '^vram_exporter, version [0-9]' <<<"$out" || { echo "--version has no version" >&2; exit 1; }
if [ -n "$revision" ] && ! grep -q "revision: $revision" <<<"$out"; then
  echo "--version does not name revision $revision" >&2
  exit 1
fi
grep -q 'build date: *[0-9]\{8\}-' <<<"$out" || { echo "--version has no build date" >&2; exit 1; }

echo "== users"
getent passwd vram_exporter
getent group vram-push

echo "== systemd-analyze verify"
# The unit's After=nvidia-persistenced.service names a unit that is not on a machine
# without the NVIDIA driver; verify says nothing for that (After= is ordering only).
systemd-analyze verify /usr/lib/systemd/system/vram_exporter.service

echo "== dpkg -P vram-exporter"
dpkg -P vram-exporter
if [ -e /usr/bin/vram_exporter ] || [ -e /usr/lib/systemd/system/vram_exporter.service ]; then
  echo "files left after purge" >&2
  exit 1
fi
echo "package: built, installed, --version and systemd-analyze verify passed, purged"
