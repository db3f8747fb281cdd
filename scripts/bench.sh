#!/usr/bin/env bash
# Runs every heapwatch benchmark and prints its figures: `bash scripts/bench.sh` (as root on Debian 12).
#
# Steps (one line each below; each step prints its own table):
#   1. deps: the project's packages (scripts/deps.sh) plus what only the benchmarks need:
#      visualvm (VisualVM's heap library, the analysis baseline) and openjdk-17-jdk-headless (javac/jcmd).
#   2. build: a Release build of the benchmark binaries in $HEAPWATCH_BENCH_BUILD_DIR (default build-bench/).
#   3. storage: bench/storage/run.sh — ingest rate and bytes on disk per (class, snapshot) sample.
#   4. diff: trend-detector evaluation time (heapwatch_diff_bench) and detection latency / false positives
#      over synthetic series (heapwatch_trend_sweep).
#   5. analysis: bench/analysis/run.sh — dumps of real JVMs made on this machine (64 MiB, 256 MiB and
#      about 1 GiB by default; cached in $HEAPWATCH_BENCH_CACHE, default /var/tmp/heapwatch-bench, never in
#      the repo), then parse / dominators / retained sizes / GC-root paths (seconds, peak RSS) and the
#      ratios against reading the file, Boost.Graph's Lengauer-Tarjan and VisualVM's heap library.
#   5b. dynamic: bench/analysis/dynamic_run.sh — the dynaTrace thesis's timing tables (seeds/001 Tables A.1,
#      A.5-A.8) re-measured: its generated graphs at its sizes, a JVM dump of its Table A.1 size and the ~1 GiB
#      dump; SCCs, dominating articulation points, GC size, DAP / exact / estimated dynamic sizes.
#   6. collection: bench/collection/run.sh — what a class histogram costs the watched JVM (pause per mode
#      per GiB of live set) and what watching costs a fixed workload in throughput (no watcher, jcmd every
#      60 s, heapwatchd defaults), on JVMs with 0.5, 2 and 8 GiB live, G1 and Parallel. Estimated 2-2.5 h
#      with its defaults; HEAPWATCH_BENCH_COLLECTION=quick runs its quick mode (0.5 GiB, 11 min measured),
#      HEAPWATCH_BENCH_COLLECTION=0 skips it. Its own settings: bench/collection/README.md.
# Environment: HEAPWATCH_BENCH_SIZES="64 256 1024" (MiB of dump), HEAPWATCH_BENCH_SKIP_VISUALVM=1 to skip
# the (slow) VisualVM baseline, HEAPWATCH_BENCH_SKIP_BOOST=1 to skip the Boost baseline.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HEAPWATCH_BENCH_BUILD_DIR:-$root/build-bench}
export HEAPWATCH_BENCH_CACHE=${HEAPWATCH_BENCH_CACHE:-/var/tmp/heapwatch-bench}

step_deps() {
  bash "$root/scripts/deps.sh"
  local extra=(visualvm openjdk-17-jdk-headless python3)
  local missing=()
  for p in "${extra[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  fi
}

step_build() {
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEAPWATCH_BUILD_TESTS=OFF \
    -DHEAPWATCH_BUILD_BENCH=ON >/dev/null
  cmake --build "$build" -j2 --target heapwatch_analysis_bench heapwatch_storage_bench heapwatch_diff_bench \
    heapwatch_trend_sweep heapwatchd heapwatch_dynamic_bench
}

step_storage() {
  bash "$root/bench/storage/run.sh" "$build/bench/storage/heapwatch_storage_bench"
}

step_diff() {
  "$build/bench/diff/heapwatch_diff_bench"
  "$build/bench/diff/heapwatch_trend_sweep"
}

step_analysis() {
  bash "$root/bench/analysis/run.sh" "$build/bench/analysis/heapwatch_analysis_bench"
}

step_dynamic() {
  bash "$root/bench/analysis/dynamic_run.sh" "$build/bench/analysis/heapwatch_dynamic_bench"
}

step_collection() {
  case ${HEAPWATCH_BENCH_COLLECTION:-full} in
    0) echo "collection benchmark skipped (HEAPWATCH_BENCH_COLLECTION=0)" ;;
    quick) HEAPWATCHD=${HEAPWATCHD:-$build/daemon/heapwatchd} bash "$root/bench/collection/run.sh" --quick ;;
    *) HEAPWATCHD=${HEAPWATCHD:-$build/daemon/heapwatchd} bash "$root/bench/collection/run.sh" ;;
  esac
}

step_deps
step_build
step_storage
step_diff
step_analysis
step_dynamic
step_collection
