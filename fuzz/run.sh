#!/usr/bin/env bash
# `make fuzz`: runs every fuzz target (or FUZZ_TARGETS) for FUZZ_SECONDS each, one at a time, and
# prints what each did: executions, coverage (libFuzzer's final `cov:`/`ft:`), the corpus libFuzzer
# keeps (units/size), its fuzzing time and findings. Needs the nightly toolchain; installs cargo-fuzz
# when it is missing.
#
#   FUZZ_SECONDS=300                      seconds per target
#   FUZZ_SECONDS_<target>=900             per-target override (e.g. FUZZ_SECONDS_application_decide)
#   FUZZ_TARGETS="work_item ..."          a subset (default: all)
#   FUZZ_SANITIZER=address                address (default; makes -malloc_limit_mb effective) or none
#
# Every run is bounded: -rss_limit_mb=512 -malloc_limit_mb=256 -timeout=5, so an unbounded
# allocation or a hang is a finding like a panic. Findings land in fuzz/artifacts/<target>/.
set -uo pipefail
cd "$(dirname "$0")"

ALL_TARGETS="notification_event work_item application_decide signature_headers ingest_request slack_interaction"
EDGE_TARGETS=" signature_headers ingest_request slack_interaction "
targets=${FUZZ_TARGETS:-$ALL_TARGETS}
seconds=${FUZZ_SECONDS:-300}
sanitizer=${FUZZ_SANITIZER:-address}
CARGO=${CARGO:-cargo}

if ! $CARGO fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  $CARGO install cargo-fuzz --locked || exit 1
fi

features=()
for t in $targets; do
  case "$EDGE_TARGETS" in *" $t "*) features=(--features edge) ;; esac
done

./seed.sh || exit 1
for t in $targets; do
  $CARGO +nightly fuzz build -s "$sanitizer" "${features[@]}" "$t" || exit 1
done

mkdir -p logs
summary=$(mktemp)
printf '%-20s %12s %8s %8s %16s %8s %9s\n' target executions cov ft corpus fuzz_s findings >"$summary"
failed=0
total=0
for t in $targets; do
  var="FUZZ_SECONDS_$t"
  s=${!var:-$seconds}
  mkdir -p "corpus/$t" "artifacts/$t"
  echo "== $t: $s s"
  start=$(date +%s)
  $CARGO +nightly fuzz run -s "$sanitizer" "${features[@]}" "$t" "corpus/$t" -- \
    -max_total_time="$s" -rss_limit_mb=512 -malloc_limit_mb=256 -timeout=5 \
    -dict=dict/json.dict -close_fd_mask=1 -print_final_stats=1 >"logs/$t.log" 2>&1
  rc=$?
  # libFuzzer's own figures: its last status line (cov, ft, the corpus it keeps: units/size)
  # and its time; the build that `cargo fuzz run` starts with is not counted.
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' | tail -1)
  last=$(grep -E '^#[0-9]+' "logs/$t.log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corpus=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last")
  [ -z "$execs" ] && execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")
  wall=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "logs/$t.log" | tail -1)
  [ -z "$wall" ] && wall="$(($(date +%s) - start))*"
  findings=$(find "artifacts/$t" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' -o -name 'slow-unit-*' \) -newer "$summary" | wc -l)
  [ "$rc" -ne 0 ] && failed=1 && echo "   $t exited with $rc, see fuzz/logs/$t.log"
  total=$((total + ${execs:-0}))
  printf '%-20s %12s %8s %8s %16s %8s %9s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "$wall" "$findings" >>"$summary"
done
echo
cat "$summary"
printf '%-20s %12s\n' total "$total"
rm -f "$summary"
exit "$failed"
