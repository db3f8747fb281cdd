#!/usr/bin/env bash
# Fuzzes the HPROF reader with libFuzzer for a bounded time.
#   scripts/fuzz.sh [SECONDS=60] [WORK_DIR=build-fuzz/work]
# Builds collectors/hprof/fuzz (clang, -fsanitize=fuzzer,address,undefined) into $HEAPWATCH_FUZZ_BUILD_DIR
# (default build-fuzz), seeds a corpus with prefixes of the small HPROF files of the external corpora
# (HEAPWATCH_CORPORA_DIR, default ../shared/corpora; generated in WORK_DIR, never copied into the repository)
# and of a gzip-compressed dump, then runs the fuzzer on one core. Exits non-zero on any crash, leak, timeout
# or sanitizer report; the reproducer is left in WORK_DIR/artifacts. Long run: scripts/fuzz.sh 3600.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
work=${2:-$root/build-fuzz/work}
build=${HEAPWATCH_FUZZ_BUILD_DIR:-$root/build-fuzz}
corpora=${HEAPWATCH_CORPORA_DIR:-$root/../shared/corpora}

cmake -S "$root/collectors/hprof/fuzz" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$build" --target hprof_fuzzer -j2

mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
if [ -d "$corpora" ]; then
  i=0
  while IFS= read -r -d '' f; do
    size=$(stat -c %s "$f")
    [ "$size" -le $((4 * 1024 * 1024)) ] || continue
    for n in 2048 16384 131072; do
      head -c "$n" "$f" > "$work/seeds/prefix-$i-$n"
    done
    i=$((i + 1))
  done < <(find "$corpora" -type f \( -name '*.hprof' -o -name '*.bin' -o -name '*.android-hprof' \) -print0)
  gz=$(find "$corpora" -type f -name '*.hprof.gz' | head -n 1)
  if [ -n "$gz" ]; then head -c 65536 "$gz" > "$work/seeds/gzip-prefix"; fi
fi

"$build/hprof_fuzzer" -max_total_time="$seconds" -max_len=262144 -timeout=30 -rss_limit_mb=2560 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" "$work/seeds"
