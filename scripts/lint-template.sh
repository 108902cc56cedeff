#!/usr/bin/env bash
# Lints template.yaml; every check must be clean (zero findings):
#   1. cfn-lint, from the test venv .venv (scripts/python-env.sh creates it: moto[server] + cfn-lint);
#   2. `sam validate --lint`, from its own venv .venv-sam (aws-sam-cli pins exact boto3 and click
#      versions that differ from what moto pulls into .venv, so the two never share a venv);
#   3. cfn-lint on the template as SAM's translator expands it (see below why).
# With CHECKOV=1 it also runs checkov (its own venv .venv-checkov, scripts/checkov-env.sh).
#
# Every install is idempotent and skipped when the pinned version is already there. Neither check
# needs AWS credentials or a region. Exit status: 0 when every check is clean, 1 otherwise (each
# check's findings are printed as they come).
#
# Environment: PYTHON (default python3) picks the interpreter for new venvs; VENV (default
# <repo>/.venv, as in scripts/python-env.sh) and SAM_VENV (default <repo>/.venv-sam) the venvs;
# TEMPLATE (default template.yaml) the file; CHECKOV=1 adds the checkov run.
set -euo pipefail

SAM_CLI_VERSION="1.170.0"

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
template="${TEMPLATE:-template.yaml}"
venv="${VENV:-${root}/.venv}"
sam_venv="${SAM_VENV:-${root}/.venv-sam}"
python="${PYTHON:-python3}"

export SAM_CLI_TELEMETRY=0

say() { echo "lint-template: $*"; }
die() {
    echo "lint-template: $*" >&2
    exit 1
}

# --- cfn-lint in .venv -------------------------------------------------------------------------
ensure_cfn_lint() {
    [[ -x "${venv}/bin/cfn-lint" ]] && return 0
    if [[ -f scripts/python-env.sh ]]; then
        # The test venv's own installer (pinned moto[server] + cfn-lint).
        bash scripts/python-env.sh || say "scripts/python-env.sh failed; installing cfn-lint alone"
    fi
    if [[ ! -x "${venv}/bin/cfn-lint" ]]; then
        [[ -x "${venv}/bin/python" ]] || "$python" -m venv "$venv" || die "could not create ${venv}"
        "${venv}/bin/python" -m pip install --quiet --disable-pip-version-check cfn-lint \
            || die "pip install cfn-lint failed (is the Python package index reachable?)"
    fi
}

# --- aws-sam-cli in .venv-sam --------------------------------------------------------------------
sam_up_to_date() {
    [[ -x "${sam_venv}/bin/sam" ]] || return 1
    "${sam_venv}/bin/python" - "$SAM_CLI_VERSION" <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version
sys.exit(0 if version("aws-sam-cli") == sys.argv[1] else 1)
PY
}

ensure_sam() {
    sam_up_to_date && return 0
    if [[ -e "$sam_venv" ]] && ! "${sam_venv}/bin/python" -c 'pass' >/dev/null 2>&1; then
        say "${sam_venv} is broken; recreating it"
        rm -rf "$sam_venv"
    fi
    if [[ ! -x "${sam_venv}/bin/python" ]]; then
        say "creating ${sam_venv} with $("$python" --version 2>&1)"
        "$python" -m venv "$sam_venv" || die "could not create ${sam_venv} (on Debian/Ubuntu: apt-get install python3-venv)"
    fi
    # The venv ignores itself in Git (as venvs made by Python 3.13+ do), so it never shows up as
    # untracked whatever the repository's .gitignore says.
    printf '*\n' >"${sam_venv}/.gitignore"
    say "installing aws-sam-cli==${SAM_CLI_VERSION} into ${sam_venv} (a few minutes the first time)"
    "${sam_venv}/bin/python" -m pip install --quiet --disable-pip-version-check "aws-sam-cli==${SAM_CLI_VERSION}" \
        || die "pip install aws-sam-cli failed (is the Python package index reachable?)"
    sam_up_to_date || die "after the install ${sam_venv} still lacks aws-sam-cli ${SAM_CLI_VERSION}"
}

ensure_cfn_lint
ensure_sam

failed=()

say "cfn-lint ($("${venv}/bin/cfn-lint" --version 2>&1)) ${template}"
# cfn-lint's exit status is a bit set (2 errors, 4 warnings, 8 informational): any non-zero fails.
if "${venv}/bin/cfn-lint" "$template"; then
    say "cfn-lint: clean"
else
    failed+=("cfn-lint (exit $?)")
fi

say "sam validate --lint ($("${sam_venv}/bin/sam" --version 2>&1))"
if "${sam_venv}/bin/sam" validate --lint --template-file "$template"; then
    say "sam validate --lint: clean"
else
    failed+=("sam validate --lint (exit $?)")
fi

# 3. cfn-lint on the template as SAM expands it. cfn-lint on a SAM template does not report errors
#    inside the resources the transform generates, and `sam validate --lint` does the same, so a typo
#    such as FunctionResponseTypes [ReportBatchItemFailure] or ScalingConfig.MaximumConcurency passes
#    both. Expanding it with SAM's own translator (offline: a placeholder region and code location,
#    no AWS call) and linting the plain CloudFormation result catches those, and the translator
#    itself rejects unknown SAM properties.
say "cfn-lint on the SAM-expanded template"
expanded="$(mktemp -t argo-medic-expanded.XXXXXX.json)"
if AWS_DEFAULT_REGION=us-east-1 "${sam_venv}/bin/python" - "$template" "$expanded" <<'PY'
import json, sys
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

class NoManagedPolicies:  # the template names no managed policies; never look any up
    def load(self):
        return {}

src, dst = sys.argv[1], sys.argv[2]
template = yaml_parse(open(src).read())
# sam build/package replace CodeUri with an S3 location; the translator only accepts that form.
placeholder = "s3://argo-medic-lint-placeholder/code.zip"
globals_fn = template.get("Globals", {}).get("Function", {})
if "CodeUri" in globals_fn:
    globals_fn["CodeUri"] = placeholder
for resource in template.get("Resources", {}).values():
    if resource.get("Type") == "AWS::Serverless::Function" and "CodeUri" in resource.get("Properties", {}):
        resource["Properties"]["CodeUri"] = placeholder
try:
    expanded = transform(template, {}, NoManagedPolicies())
except InvalidDocumentException as e:
    for cause in e.causes:
        print(f"SAM transform: {cause.message}", file=sys.stderr)
    sys.exit(1)
json.dump(expanded, open(dst, "w"), indent=1)
PY
then
    if "${venv}/bin/cfn-lint" "$expanded"; then
        say "expanded template: clean"
        rm -f "$expanded"
    else
        failed+=("cfn-lint on the SAM-expanded template (exit $?)")
        say "the expanded template the line numbers above refer to: ${expanded}"
    fi
else
    failed+=("SAM transform of ${template}")
    rm -f "$expanded"
fi

if [[ "${CHECKOV:-0}" == "1" ]]; then
    bash scripts/checkov-env.sh
    say "checkov ($("${root}/.venv-checkov/bin/checkov" --version 2>&1)) ${template}"
    # --skip-download: no network calls (guidelines, platform). Skips are justified inline in the
    # template (checkov:skip=... comments) and listed in docs/deploy.md.
    # checkov exits 0 on a template it cannot parse, so its summary is checked too.
    if report="$("${root}/.venv-checkov/bin/checkov" --quiet --compact --skip-download --framework cloudformation -f "$template" 2>&1)"; then
        echo "$report"
        if grep -Eq 'Parsing errors: [1-9]' <<<"$report" || ! grep -q 'Passed checks: [1-9]' <<<"$report"; then
            failed+=("checkov (template not parsed)")
        else
            say "checkov: clean"
        fi
    else
        status=$?
        echo "$report"
        failed+=("checkov (exit ${status})")
    fi
fi

if ((${#failed[@]})); then
    die "FAILED: ${failed[*]}"
fi
say "all clean"
