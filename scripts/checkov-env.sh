#!/usr/bin/env bash
# Creates (or reuses) the venv .venv-checkov with checkov, the optional security scanner of
# template.yaml (scripts/lint-template.sh runs it with CHECKOV=1). Checkov gets a venv of its own
# because installing it beside aws-sam-cli breaks SAM (boto3 pins), and beside moto it would move
# the test venv's versions.
# Idempotent: when the pinned version is installed nothing happens.
#
# Environment: PYTHON (default python3) picks the interpreter; CHECKOV_VENV (default
# <repo>/.venv-checkov) the directory.
set -euo pipefail

CHECKOV_VERSION="3.3.30"

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${CHECKOV_VENV:-${root}/.venv-checkov}"
python="${PYTHON:-python3}"

die() {
    echo "checkov-env: $*" >&2
    exit 1
}

up_to_date() {
    [[ -x "${venv}/bin/checkov" ]] || return 1
    "${venv}/bin/python" - "$CHECKOV_VERSION" <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version
sys.exit(0 if version("checkov") == sys.argv[1] else 1)
PY
}

if up_to_date; then
    echo "checkov-env: ${venv} is up to date (checkov ${CHECKOV_VERSION})"
    exit 0
fi

if [[ -e "$venv" ]] && ! "${venv}/bin/python" -c 'pass' >/dev/null 2>&1; then
    echo "checkov-env: ${venv} is broken; recreating it"
    rm -rf "$venv"
fi
if [[ ! -x "${venv}/bin/python" ]]; then
    echo "checkov-env: creating ${venv} with $("$python" --version 2>&1)"
    "$python" -m venv "$venv" || die "could not create ${venv} (on Debian/Ubuntu: apt-get install python3-venv)"
fi
printf '*\n' >"${venv}/.gitignore" # the venv ignores itself in Git
echo "checkov-env: installing checkov==${CHECKOV_VERSION} into ${venv}"
"${venv}/bin/python" -m pip install --quiet --disable-pip-version-check "checkov==${CHECKOV_VERSION}" \
    || die "pip install checkov failed (is the Python package index reachable?)"
up_to_date || die "after the install ${venv} still lacks checkov ${CHECKOV_VERSION}"
echo "checkov-env: ready: ${venv}/bin/checkov"
