#!/usr/bin/env bash
# Installs cargo-lambda (with the zig toolchain it cross-compiles with) into its own virtualenv,
# .venv-lambda, from the Python package index; a no-op when the pinned version is there.
# Usage: source nothing; run it, then put .venv-lambda/bin on PATH (the Makefile does).
set -euo pipefail
CARGO_LAMBDA_VERSION="1.9.2"
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${LAMBDA_VENV:-${root}/.venv-lambda}"
python="${PYTHON:-python3}"
if [[ -x "${venv}/bin/cargo-lambda" ]] && "${venv}/bin/cargo-lambda" lambda --version 2>/dev/null | grep -q "${CARGO_LAMBDA_VERSION}"; then
    exit 0
fi
[[ -x "${venv}/bin/python" ]] || "$python" -m venv "$venv" || { echo "cargo-lambda-env: could not create ${venv}" >&2; exit 1; }
"${venv}/bin/python" -m pip install --quiet --disable-pip-version-check "cargo-lambda==${CARGO_LAMBDA_VERSION}" \
    || { echo "cargo-lambda-env: pip install cargo-lambda failed (is the Python package index reachable?)" >&2; exit 1; }
echo '*' > "${venv}/.gitignore"
"${venv}/bin/cargo-lambda" lambda --version
