#!/usr/bin/env bash
# Installs what the Go differential test of the notification templates needs (tests/template.rs,
# tests/go/notifications-render): Debian's Go toolchain and Debian's Sprig sources with their
# dependencies (`golang-go`, `golang-github-masterminds-sprig-dev`), built in GOPATH mode from
# /usr/share/gocode, so the test downloads no Go module.
# Idempotent: when `go` runs and Sprig's sources are there, nothing is installed.
#
# Environment: MEDIC_GOPATH (default /usr/share/gocode) is where Sprig's sources are looked for;
# with it set, nothing is installed (the GOPATH is yours to fill).
set -euo pipefail

gopath="${MEDIC_GOPATH:-/usr/share/gocode}"
sprig="${gopath}/src/github.com/Masterminds/sprig"

die() {
    echo "go-env: $*" >&2
    exit 1
}

if command -v go >/dev/null 2>&1 && [[ -d "$sprig" ]]; then
    echo "go-env: $(go version | cut -d' ' -f3) and Sprig (${sprig}) are installed"
    exit 0
fi
[[ -z "${MEDIC_GOPATH:-}" ]] || die "\`go\` or ${sprig} is missing, and MEDIC_GOPATH is set: install them there"

packages=(golang-go golang-github-masterminds-sprig-dev)
command -v apt-get >/dev/null 2>&1 || die "no apt-get: install Go and Masterminds/sprig v3's sources in a GOPATH and set MEDIC_GOPATH to it"
if [[ "$(id -u)" -eq 0 ]]; then
    sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
else
    die "installing ${packages[*]} needs root: run \`sudo apt-get install ${packages[*]}\`"
fi
echo "go-env: installing ${packages[*]}"
export DEBIAN_FRONTEND=noninteractive
# The package lists of a fresh machine may be missing or stale: refresh them when the first try fails.
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null ||
    { "${sudo[@]}" apt-get update -q >/dev/null && "${sudo[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null; } ||
    die "apt-get could not install ${packages[*]}"
command -v go >/dev/null 2>&1 && [[ -d "$sprig" ]] || die "installed ${packages[*]}, but \`go\` or ${sprig} is still missing"
echo "go-env: $(go version | cut -d' ' -f3) and Sprig installed"
