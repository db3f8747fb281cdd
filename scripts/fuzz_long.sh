#!/usr/bin/env bash
# The long fuzz run: every libFuzzer target (scripts/fuzz.sh lists them) one after the other, each for
# SECONDS, on one core at low priority, then a table of executions, executions per second, peak RSS and
# findings per target (the table docs/fuzzing.md records).
#   bash scripts/fuzz_long.sh [SECONDS_PER_TARGET=1200] [WORK_DIR=build-fuzz/long] [TARGET[:SECONDS]...]
# Without TARGETs: every target. TARGET:SECONDS gives that target its own time (fast targets reach many
# more executions per second than the dump readers or the gRPC service).
# Each target keeps its corpus and findings in WORK_DIR/TARGET (fuzz.sh replays earlier findings
# first); its libFuzzer output goes to WORK_DIR/TARGET.log. Exits non-zero when any target found a
# crash, leak, timeout, out-of-memory input or sanitizer report (the reproducer is in
# WORK_DIR/TARGET/artifacts).
# Fair share: the targets' speeds differ by two orders of magnitude (time arguments at ~10^4
# executions/s, IBM PHD dumps at ~10^2), so equal time gives one target most of the executions.
# HEAPWATCH_FUZZ_RUNS=N gives every target the same goal instead: N executions, at most SECONDS (or
# its own TARGET:SECONDS) each, so fast targets stop early and slow ones use their whole time.
# Totals: every run appends its figures to WORK_DIR/totals.tsv (target, seconds, executions, date);
# the table's last column sums each target's executions over every run in WORK_DIR, so running a
# slow target again (`fuzz_long.sh 1800 build-fuzz/long phd`) lifts its total.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-1200}
work=${2:-$root/build-fuzz/long}
shift $(($# < 2 ? $# : 2))
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(hprof phd text attach_reply class_histogram perf_data config time_arg query_server tokens agent_messages agent_options agent_daemon_messages)
fi
mkdir -p "$work"
status=0
total=0
rows=()
for spec in "${targets[@]}"; do
  t=${spec%%:*}
  seconds_t=$seconds
  if [[ $spec == *:* ]]; then seconds_t=${spec#*:}; fi
  echo "fuzz_long: $t for ${HEAPWATCH_FUZZ_RUNS:+$HEAPWATCH_FUZZ_RUNS runs, at most }$seconds_t s" >&2
  touch "$work/$t.start"
  started=$(date +%s)
  HEAPWATCH_FUZZ_RUNS_CAPPED=1 nice -n 15 bash "$root/scripts/fuzz.sh" "$seconds_t" "$work/$t" "$t" \
    >"$work/$t.log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - started))
  stat() { grep -o "stat::$1: *[0-9]*" "$work/$t.log" | tail -n 1 | grep -o '[0-9]*$' || echo 0; }
  runs=$(stat number_of_executed_units)
  rate=$(stat average_exec_per_sec)
  rss=$(stat peak_rss_mb)
  findings=$(find "$work/$t/artifacts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \) -newer "$work/$t.start" 2>/dev/null | wc -l)
  # A build failure leaves no artifact: count the exit code.
  if ((rc != 0 && findings == 0)); then findings="exit $rc"; fi
  ((rc == 0)) || status=1
  total=$((total + runs))
  printf '%s\t%s\t%s\t%s\n' "$t" "$elapsed" "$runs" "$(date -u +%FT%TZ)" >>"$work/totals.tsv"
  all=$(awk -F'\t' -v t="$t" '$1 == t { n += $3 } END { print n + 0 }' "$work/totals.tsv")
  rows+=("| $t | $elapsed | $runs | $rate | $rss | $findings | $all |")
done
grand=$(awk -F'\t' '{ n += $3 } END { print n + 0 }' "$work/totals.tsv")
echo "| target | seconds | executions | exec/s | peak RSS (MB) | crashes, hangs, OOMs | executions, all runs in $work |"
echo "|---|---:|---:|---:|---:|---|---:|"
printf '%s\n' "${rows[@]}"
echo "| total | | $total | | | | $grand |"
exit $status
