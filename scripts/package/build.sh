#!/usr/bin/env bash
# Builds the .deb and/or .rpm of vram_exporter into dist/ with nFPM (a Go module, fetched
# through the module proxy like every dependency; nothing else is downloaded):
#   scripts/package/build.sh [deb] [rpm]          (default: deb)
# GOARCH picks the architecture (default: the build machine's); VERSION etc. as for
# scripts/build.sh. Releases use .goreleaser.yaml instead, which packs the same files.
set -euo pipefail
cd "$(dirname "$0")/../.."

nfpm_version=v2.48.0
formats=("$@")
[ ${#formats[@]} -gt 0 ] || formats=(deb)

rm -rf build/package
mkdir -p build/package dist
bash scripts/package/unit.sh build/package/vram_exporter.service
bash scripts/build.sh -o build/package/vram_exporter
# nFPM reads these from the environment (nfpm.yaml's ${VERSION} and ${ARCH}).
VERSION=$(build/package/vram_exporter --version 2>&1 | sed -n 's/^vram_exporter, version \([^ ]*\) .*/\1/p')
ARCH=${GOARCH:-$(go env GOARCH)}
export VERSION ARCH
for f in "${formats[@]}"; do
  go run "github.com/goreleaser/nfpm/v2/cmd/nfpm@$nfpm_version" package \
    --config scripts/package/nfpm.yaml --packager "$f" --target dist/
done
ls -l dist/*.deb dist/*.rpm 2>/dev/null || true
