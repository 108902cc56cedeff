#!/usr/bin/env bash
# Getting medic, as the README says: its "Getting medic" block runs as written, with a scratch
# install root and home (CARGO_INSTALL_ROOT, HOME), so nothing of the machine's is touched; then the
# installed medic must print its version and a completion script that bash accepts.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
block="$(awk '/<!-- executed: scripts\/install-smoke.sh/{found=1; next} found && /^```sh/{inside=1; next} inside && /^```/{exit} inside{print}' README.md)"
[[ "$block" == *"cargo install"* ]] || { echo "install-smoke: no Getting medic block in README.md" >&2; exit 1; }
mkdir -p "$scratch/home/.local/share/bash-completion/completions"
# cargo and rustup keep their homes; only the install root and the user's home are scratch.
export CARGO_HOME="${CARGO_HOME:-${HOME}/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-${HOME}/.rustup}"
export PATH="${scratch}/bin:${CARGO_HOME}/bin:${PATH}"
started=$SECONDS
out="$(CARGO_INSTALL_ROOT="$scratch" HOME="$scratch/home" bash -euo pipefail -c "$block" 2>"$scratch/err")" \
    || { echo "install-smoke: the README's block failed:" >&2; tail -20 "$scratch/err" >&2; exit 1; }
[[ -x "$scratch/bin/medic" ]] || { echo "install-smoke: medic was not installed into the install root" >&2; exit 1; }
# The argocd CLI's plugin name: `argocd medic ...` runs it.
[[ -x "$scratch/bin/argocd-medic" ]] || { echo "install-smoke: argocd-medic was not installed into the install root" >&2; exit 1; }
[[ "$out" == "medic "* ]] || { echo "install-smoke: medic --version printed: $out" >&2; exit 1; }
completion="$scratch/home/.local/share/bash-completion/completions/medic"
grep -q 'complete .*medic' "$completion" || { echo "install-smoke: no bash completion for medic in $completion" >&2; exit 1; }
# The completion script loads, and completes `medic swi` as bash would ask it to: the function
# gets the command, the word being completed and the one before it.
completed="$(bash -c "source '$completion'; COMP_WORDS=(medic swi); COMP_CWORD=1; _medic medic swi medic; printf '%s\n' \"\${COMPREPLY[@]}\"")"
[[ "$completed" == "switch" ]] || { echo "install-smoke: the bash completion completes \`medic swi\` to: $completed" >&2; exit 1; }
echo "install-smoke: ok: $out installed by the README's commands in $((SECONDS - started)) s, bash completion works"
