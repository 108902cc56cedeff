#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with the sample payloads of events/ that fit each target, plus the
# small committed seeds of fuzz/seeds/<target>/ (regression inputs among them). Idempotent: files
# are named by content hash, and what the fuzzer already added to a corpus stays.
set -euo pipefail
cd "$(dirname "$0")"
events=../events

seed() { # seed <target> <file or -> : one corpus file, named by its SHA-1
  local target=$1 src=$2 tmp
  mkdir -p "corpus/$target"
  tmp=$(mktemp)
  if [ "$src" = - ]; then cat >"$tmp"; else cat "$src" >"$tmp"; fi
  mv "$tmp" "corpus/$target/$(sha1sum "$tmp" | cut -c1-40)"
}

for target in seeds/*/; do
  target=$(basename "$target")
  mkdir -p "corpus/$target"
  for f in seeds/"$target"/*; do [ -f "$f" ] && seed "$target" "$f"; done
done

# Notification events: the webhook bodies, and the bodies of the Function URL requests for ingest.
for f in "$events"/webhook/*.json; do
  seed notification_event "$f"
  seed work_item "$f" # the `awssqs` service puts bare events on the queue
done
for f in "$events"/lambda/ingest/*.json; do
  jq -j '.body // empty' "$f" | seed notification_event -
done

# Work items: every SQS message body of the sample batch (one of them is poison on purpose).
n=$(jq '.Records | length' "$events"/lambda/worker/batch-with-poison.json)
for i in $(seq 0 $((n - 1))); do
  jq -j ".Records[$i].body" "$events"/lambda/worker/batch-with-poison.json | seed work_item -
done

# Applications: the sample apps, and the app of every decision-quality corpus case.
for f in "$events"/apps/*.json; do seed application_decide "$f"; done
for f in "$events"/corpus/*/*.json; do jq -c '.app // empty' "$f" | seed application_decide -; done

# Ingest requests: `<header block>\n\n<body>`, see fuzz_targets/ingest_request.rs.
for f in "$events"/lambda/ingest/*.json; do
  jq -j '(.rawPath) + "\n" + ([.headers | to_entries[] | .key + ": " + .value] | join("\n")) + "\n\n" + (.body // "")' "$f" |
    seed ingest_request -
done

# Slack interactions: the form body of the sample button click.
for f in "$events"/lambda/slack-actions/*.json; do jq -j '.body' "$f" | seed slack_interaction -; done

# Empty files (a fresh corpus dir makes libFuzzer start from nothing) are not seeds.
find corpus -type f -empty -delete
for d in corpus/*/; do printf '%s: %s seeds\n' "$(basename "$d")" "$(find "$d" -type f | wc -l)"; done
