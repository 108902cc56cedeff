#!/usr/bin/env bash
# Creates (or reuses) the project's Python virtualenv at .venv with the tools the tests need:
#   - moto[server]: a local AWS (SQS, DynamoDB) for the adapters' integration tests;
#   - cfn-lint: checks template.yaml;
#   - awscli: runs the runbooks' AWS CLI commands as written, against moto (tests/runbooks.rs).
# Idempotent: when .venv already holds the pinned versions, nothing is installed, so a re-run
# costs well under a second. Exits non-zero with a message naming what failed.
#
# Environment: PYTHON (default python3) picks the interpreter; VENV (default <repo>/.venv) the
# directory.
set -euo pipefail

MOTO_VERSION="5.2.5"
CFN_LINT_VERSION="1.58.0"
AWSCLI_VERSION="1.46.2"

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${VENV:-${root}/.venv}"
python="${PYTHON:-python3}"

die() {
    echo "python-env: $*" >&2
    exit 1
}

# True when the venv's interpreter runs and every pinned distribution is installed at its version
# (including moto's server extras, which moto_server needs).
up_to_date() {
    [[ -x "${venv}/bin/python" && -x "${venv}/bin/moto_server" && -x "${venv}/bin/cfn-lint" && -x "${venv}/bin/aws" ]] || return 1
    "${venv}/bin/python" - "$MOTO_VERSION" "$CFN_LINT_VERSION" "$AWSCLI_VERSION" <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version, PackageNotFoundError
want = {"moto": sys.argv[1], "cfn-lint": sys.argv[2], "awscli": sys.argv[3]}
try:
    ok = all(version(name) == v for name, v in want.items())
    # moto[server] extras: without them moto_server exits at start-up.
    for extra in ("flask", "flask-cors"):
        version(extra)
except PackageNotFoundError:
    ok = False
sys.exit(0 if ok else 1)
PY
}

if up_to_date; then
    echo "python-env: ${venv} is up to date (moto ${MOTO_VERSION}, cfn-lint ${CFN_LINT_VERSION}, awscli ${AWSCLI_VERSION})"
    exit 0
fi

command -v "$python" >/dev/null 2>&1 || die "\`${python}\` not found: install Python 3.9 or newer (or set PYTHON=/path/to/python3)"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' >/dev/null 2>&1 \
    || die "\`${python}\` is not Python 3.9 or newer, which moto ${MOTO_VERSION} needs (set PYTHON=/path/to/python3)"

# A venv whose interpreter no longer runs (Python upgraded or removed) is rebuilt from scratch.
if [[ -e "${venv}" ]] && ! "${venv}/bin/python" -c 'pass' >/dev/null 2>&1; then
    echo "python-env: ${venv} is broken; recreating it"
    rm -rf "${venv}"
fi
if [[ ! -x "${venv}/bin/python" ]]; then
    echo "python-env: creating ${venv} with $("$python" --version 2>&1)"
    "$python" -m venv "${venv}" \
        || die "could not create ${venv} (on Debian/Ubuntu: apt-get install python3-venv)"
fi

echo "python-env: installing moto[server]==${MOTO_VERSION} cfn-lint==${CFN_LINT_VERSION} awscli==${AWSCLI_VERSION} into ${venv}"
"${venv}/bin/python" -m pip install --quiet --disable-pip-version-check \
    "moto[server]==${MOTO_VERSION}" "cfn-lint==${CFN_LINT_VERSION}" "awscli==${AWSCLI_VERSION}" \
    || die "pip install failed (is the Python package index reachable?)"

up_to_date || die "after the install ${venv} still lacks moto[server] ${MOTO_VERSION}, cfn-lint ${CFN_LINT_VERSION} or awscli ${AWSCLI_VERSION}"
echo "python-env: ready: ${venv}/bin/moto_server, ${venv}/bin/cfn-lint, ${venv}/bin/aws"
