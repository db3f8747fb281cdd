#!/usr/bin/env bash
# The dynamic-size benchmark against the dynaTrace thesis's own tables (seeds/001 appendix A), called by
# scripts/bench.sh: SCC condensation, dominating articulation points, GC (retained) size, the thesis's DAP
# dynamic size of every object, dynamic_size.h's exact and estimated dynamic sizes of every object and the
# exact dynamic size of one class's instances, each timed on this machine and set against the thesis's figure.
#
#   1. the generated graph families of Tables A.5-A.8 (balanced tree, unbalanced tree, DAG1, DAG2) at the
#      thesis's 19 sizes, 1001-10001 nodes (heapwatch_dynamic_bench generated);
#   2. a dump of about Table A.1's size (1,780,673 nodes, 4,060,032 references): a JDK 17 JVM running
#      bench/analysis/java/ServerHeap.java (make_server_dump.sh), read by heapwatch's HPROF reader;
#   3. the analysis benchmark's ~1 GB dump (make_dump.sh 1024, HeapBuilder) for the exact dynamic size of one
#      class's instances (target 0.5 s: its leak suspect, a domain class and java.lang.String) and the
#      estimate at 18.6 M objects.
# Prints markdown tables (thesis figure in its time units, ours in seconds, the ratio); the raw "result" and
# "check" lines go to $HEAPWATCH_BENCH_CACHE/results/dynamic-*.txt. Exits non-zero if a check fails (DAP
# dynamic sizes different from the exact ones or the closed forms, DAP counts different from the thesis's).
#
# Usage: dynamic_run.sh PATH/TO/heapwatch_dynamic_bench
# Environment (defaults):
#   HEAPWATCH_BENCH_CACHE=/var/tmp/heapwatch-bench   dumps and compiled Java classes (never in the repo)
#   HEAPWATCH_DYNAMIC_STEPS="generated thesis big"   which of the three steps to run
#   HEAPWATCH_DYNAMIC_SCALE=1.02                      ServerHeap scale (1.02: 1.77 M objects, 4.08 M references)
#   HEAPWATCH_DYNAMIC_BIG_DAP_VISITS=2000000000       budget of the DAP dynamic size on the 1 GB dump (visits;
#       about 8.5 ns of CPU each here), past which it is reported as over budget
#   HEAPWATCH_DYNAMIC_BIG_EXACT_WORK=8589934592       budget of dynamic_size.h's exact sizes there (work units)
set -euo pipefail
bench=$1
here=$(cd "$(dirname "$0")" && pwd)
cache=${HEAPWATCH_BENCH_CACHE:-/var/tmp/heapwatch-bench}
steps=${HEAPWATCH_DYNAMIC_STEPS:-generated thesis big}
scale=${HEAPWATCH_DYNAMIC_SCALE:-1.02}
big_dap=${HEAPWATCH_DYNAMIC_BIG_DAP_VISITS:-2000000000}
big_exact=${HEAPWATCH_DYNAMIC_BIG_EXACT_WORK:-8589934592}
mkdir -p "$cache/results"
status=0

# run NAME ARGS...: runs the bench, keeps every line in results/dynamic-NAME.txt, prints the tables.
run() {
  local name=$1
  shift
  local out="$cache/results/dynamic-$name.txt"
  echo "dynamic bench: $*" >&2
  if ! "$bench" "$@" >"$out"; then
    echo "dynamic bench: $name: a check failed or the run stopped (see $out)" >&2
    status=1
  fi
  grep -E '^check FAILED' "$out" >&2 || true
  grep -vE '^(result|check) ' "$out"
}

for step in $steps; do
  case $step in
    generated)
      run generated generated
      ;;
    thesis)
      dump="$cache/server-${scale}.hprof"
      bash "$here/make_server_dump.sh" "$dump" "$scale"
      run thesis dump --class 'ServerHeap$Measurement' --class 'ServerHeap$Node' "$dump"
      ;;
    big)
      dump="$cache/heap-1024m.hprof"
      bash "$here/make_dump.sh" 1024 "$dump"
      run big dump --class 'HeapBuilder$LeakedSession' --class 'HeapBuilder$Customer' \
        --class java.lang.String --skip-simple --dap-max-visits "$big_dap" \
        --exact-max-work "$big_exact" "$dump"
      ;;
    *)
      echo "dynamic bench: unknown step $step" >&2
      exit 2
      ;;
  esac
done
exit $status
