#!/usr/bin/env bash
# Runs every test of vram_exporter on a fresh machine: installs what the tests need
# (Debian packages) when it is missing, then Go tests with -race, the Python client's
# tests, type check and offline install, and the static checks. A missing part makes
# this fail; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

export CGO_ENABLED=1
export CGO_CFLAGS="${CGO_CFLAGS:--Wno-deprecated-declarations}"
# Tests that need a real part (Python, Prometheus, Alertmanager) fail instead of
# skipping when this is set.
export VRAM_REQUIRE_ALL=1

need_pkgs=()
command -v python3 >/dev/null || need_pkgs+=(python3)
command -v gcc >/dev/null || need_pkgs+=(gcc)
# deploy's TestSystemdUnitVerifies runs systemd-analyze verify on the shipped unit.
command -v systemd-analyze >/dev/null || need_pkgs+=(systemd)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing: ${need_pkgs[*]}; install them (apt-get install ${need_pkgs[*]}) or run as root" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}"
fi

# The deploy/ end-to-end test runs the shipped alert rules in a real Prometheus and
# Alertmanager (Debian's packages; promtool comes with prometheus). Only the binaries
# are used: the test starts its own servers on loopback.
prom_pkgs=()
{ command -v prometheus >/dev/null && command -v promtool >/dev/null; } || prom_pkgs+=(prometheus)
{ command -v prometheus-alertmanager >/dev/null || command -v alertmanager >/dev/null; } || prom_pkgs+=(prometheus-alertmanager)
if [ ${#prom_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing: ${prom_pkgs[*]} (prometheus, promtool, alertmanager); install them (apt-get install ${prom_pkgs[*]}) or run as root" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${prom_pkgs[@]}"
fi

echo "== go vet"
go vet ./...
echo "== builds without cgo and for macOS"
# NVML (go-nvml) is cgo and the push socket Linux-only: these binaries report them as
# not built in and serve the rest (README "Building without cgo"). Only the packages
# with platform files are vetted for these targets; the builds compile everything else.
CGO_ENABLED=0 go build -o /dev/null ./cmd/vram_exporter
CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 go build -o /dev/null ./cmd/...
CGO_ENABLED=0 go vet ./cmd/... ./nvml/... ./push/... ./procinfo/...
CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 go vet ./cmd/... ./nvml/... ./push/... ./procinfo/...
CGO_ENABLED=0 go test -count=1 ./nvml/ ./push/ ./procinfo/

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then echo "gofmt would change: $bad" >&2; exit 1; fi

# staticcheck, pinned: 2026.2.2 is the release built for Go 1.26 (its go.mod says
# go 1.26.0). go run fetches it through the module proxy, like every other dependency,
# and keeps it out of go.mod.
staticcheck_version=v0.8.2
echo "== staticcheck $staticcheck_version"
go run "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version" ./...

echo "== package: build the snapshot .deb, dpkg -i, --version, systemd-analyze verify, purge"
# As root (it installs a package, then removes it and the user and group it made).
bash scripts/package/test.sh

echo "== python client tests"
(cd client/python && python3 -m unittest -v 2>&1)

# The client as a package, with Debian's Python and packages only (no PyPI in CI):
# mypy --strict, then `pip install ./client/python` offline into a fresh venv and a
# smoke test of the installed copy.  Debian's mypy lives in /usr/bin/python3 (the
# python3-mypy package has no mypy command), so these steps use that interpreter.
deb_py=/usr/bin/python3
py_pkgs=()
[ -x "$deb_py" ] || py_pkgs+=(python3)
"$deb_py" -c 'import mypy' 2>/dev/null || py_pkgs+=(python3-mypy)
"$deb_py" -c 'import ensurepip, venv' 2>/dev/null || py_pkgs+=(python3-venv)
"$deb_py" -c 'import setuptools' 2>/dev/null || py_pkgs+=(python3-setuptools)
"$deb_py" -m pip --version >/dev/null 2>&1 || py_pkgs+=(python3-pip)
if [ ${#py_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing: ${py_pkgs[*]} (mypy, venv, setuptools, pip for the Python client's package checks); install them (apt-get install ${py_pkgs[*]}) or run as root" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${py_pkgs[@]}"
fi
echo "== python client: mypy --strict (Python 3.8 target)"
(cd client/python && "$deb_py" -m mypy)  # settings in pyproject.toml [tool.mypy]
echo "== python client: pip install ./client/python (offline venv) and smoke test"
py_tmp=$(mktemp -d "${TMPDIR:-/tmp}/vpy.XXXXXX")
# pip builds in the source tree; its build/ and egg-info are not ours to keep
cleanup_py() { rm -rf "$py_tmp" client/python/build client/python/vram_exporter_client.egg-info; }
trap cleanup_py EXIT
"$deb_py" -m venv --system-site-packages "$py_tmp/venv"
"$py_tmp/venv/bin/pip" install --quiet --no-build-isolation --no-index ./client/python
# -I: the script's directory (the source tree) must not shadow the installed copy
smoke="$PWD/client/python/install_smoke.py"
(cd "$py_tmp" && "$py_tmp/venv/bin/python" -I "$smoke")
cleanup_py
trap - EXIT

echo "== go test -race"
# The tests get a temporary directory of their own that must be empty afterwards, so a
# test that leaves a binary, socket or file behind fails the run. The name is short:
# unix socket paths under it are limited to 107 bytes.
test_tmp=$(mktemp -d "${TMPDIR:-/tmp}/vt.XXXXXX")
# Like /tmp: the hostile and permission tests run parts of themselves as an unprivileged
# user (uid 65534), who must reach their t.TempDir() under it.
chmod 1777 "$test_tmp"
trap 'rm -rf "$test_tmp"' EXIT
# -timeout: the race detector makes the leak evaluation's sweeps slow; on a 2-core machine
# it takes 3.5 minutes alone and past go test's default 10 per package when the machine
# is busy besides (measured here with two evaluation sweeps running). CI allows 90.
TMPDIR="$test_tmp" go test -race -count=1 -timeout 30m ./...
left=$(ls -A "$test_tmp")
if [ -n "$left" ]; then echo "the tests left files in their temporary directory: $left" >&2; exit 1; fi
