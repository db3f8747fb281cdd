#!/usr/bin/env bash
# Storage benchmark: durable ingest rate (snapshots/s, 3,000 classes each) and bytes on disk per
# (class, snapshot) sample, then the read paths. Usage: bench/storage/run.sh [path/to/heapwatch_storage_bench]
# The store is created under $HEAPWATCH_BENCH_DIR (default /var/tmp): keep it on a real disk, since every
# Append fsyncs. Extra arguments after the binary go to Google Benchmark (e.g. --benchmark_filter=Ingest).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build-bench/bench/storage/heapwatch_storage_bench}
shift || true
export HEAPWATCH_BENCH_DIR=${HEAPWATCH_BENCH_DIR:-/var/tmp}
echo "storage benchmark: store under $HEAPWATCH_BENCH_DIR ($(df -h --output=source,fstype "$HEAPWATCH_BENCH_DIR" | tail -1))"
exec "$bin" --benchmark_counters_tabular=true "$@"
