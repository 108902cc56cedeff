#!/usr/bin/env bash
# The four functions' bootstraps link each crate once, but for the duplicates
# scripts/duplicate-crates.allow names with the upstream crates that force them (make lint).
set -euo pipefail
cd "$(dirname "$0")/.."
found="$(for p in ingest worker sweeper slack-actions; do
    cargo tree -d -e normal --depth 0 --locked --target aarch64-unknown-linux-gnu -p "$p" 2>/dev/null
done | awk 'NF == 2 && $2 ~ /^v[0-9]/ { sub(/^v/, "", $2); v[$1] = v[$1] " " $2 } END { for (n in v) { split(v[n], a, " "); m = ""; delete seen; for (i in a) if (!(a[i] in seen)) { seen[a[i]] = 1; m = m " " a[i] }; print n m } }' \
    | while read -r name versions; do echo "$name $(echo "$versions" | tr ' ' '\n' | sort -V | tr '\n' ' ' | sed 's/ $//')"; done | sort)"
allowed="$(grep -v '^#' scripts/duplicate-crates.allow | sed 's/ *#.*//' | grep -v '^$' | sort)"
if [[ "$found" != "$allowed" ]]; then
    echo "duplicate-crates: the functions' duplicate crates differ from scripts/duplicate-crates.allow" >&2
    diff <(echo "$allowed") <(echo "$found") | sed 's/^</  allowed, not found:/; s/^>/  found, not allowed:/' | grep -v "^[0-9]" | grep -v "^---" >&2 || true
    echo "  remove a duplicate by aligning our version with the upstream one, or allow it with the crate that forces it" >&2
    exit 1
fi
echo "duplicate-crates: ok ($(echo "$found" | grep -c .) allowed duplicates, each forced upstream)"
