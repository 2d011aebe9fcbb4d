#!/usr/bin/env bash
# Builds vram_exporter with its build_info stamped (version, revision, branch, build user
# and date: vram_exporter --version and the vram_exporter_build_info metric show them).
#   scripts/build.sh [-o OUTPUT] [go build flags...]      (default output: ./vram_exporter)
# From git by default; set VERSION, REVISION, BRANCH, BUILD_USER, BUILD_DATE to override
# (the Dockerfile does: its build context has no .git). GOOS/GOARCH/CGO_ENABLED pass
# through to go build; NVML needs cgo (CGO_ENABLED=0 builds without it, README
# "Building without cgo").
set -euo pipefail
cd "$(dirname "$0")/.."

out=./vram_exporter
if [ "${1:-}" = "-o" ]; then
  out=$2
  shift 2
fi

git_or() { git "$@" 2>/dev/null || true; }
# git describe gives v1.2.3 or v1.2.3-4-gabcdef (-dirty); without tags, 0.0.0-<short sha>.
version=${VERSION:-$(git_or describe --tags --match 'v[0-9]*' --dirty)}
if [ -z "$version" ]; then
  short=$(git_or rev-parse --short HEAD)
  version=0.0.0-${short:-unknown}
fi
version=${version#v}
revision=${REVISION:-$(git_or rev-parse HEAD)}
branch=${BRANCH:-$(git_or rev-parse --abbrev-ref HEAD)}
build_user=${BUILD_USER:-$(id -un)@$(hostname)}
# prometheus/common/version's own date layout (its BuildDate is a string).
build_date=${BUILD_DATE:-$(date -u +%Y%m%d-%H:%M:%S)}

pkg=github.com/prometheus/common/version
ldflags="-s -w -X $pkg.Version=$version -X $pkg.Revision=${revision:-unknown} -X $pkg.Branch=${branch:-unknown}"
ldflags+=" -X $pkg.BuildUser=$build_user -X $pkg.BuildDate=$build_date"

export CGO_ENABLED=${CGO_ENABLED:-1}
export CGO_CFLAGS=${CGO_CFLAGS:--Wno-deprecated-declarations}
go build -trimpath -ldflags "$ldflags" -o "$out" "$@" ./cmd/vram_exporter
echo "built $out: version $version, revision ${revision:-unknown}, branch ${branch:-unknown}" >&2
