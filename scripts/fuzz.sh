#!/usr/bin/env bash
# Fuzzes a dump reader (collectors/dumps) with libFuzzer for a bounded time.
#   scripts/fuzz.sh [SECONDS=60] [WORK_DIR=build-fuzz/work] [READER=hprof]
# READER: hprof (seeds: prefixes of the corpora's HPROF files and of a gzip-compressed one), phd (IBM
# Portable Heap Dumps; seeds: the corpora's .phd files, whole or as prefixes) or text (IBM text heap
# dumps; seeds: the hand-written files of tests/collectors/dumps/data/ibm_text).
# Builds collectors/dumps/fuzz (clang, -fsanitize=fuzzer,address,undefined) into $HEAPWATCH_FUZZ_BUILD_DIR
# (default build-fuzz), seeds a corpus with prefixes of the small HPROF files of the external corpora
# (HEAPWATCH_CORPORA_DIR, default ../shared/corpora; generated in WORK_DIR, never copied into the repository)
# and of a gzip-compressed dump, then runs the fuzzer on one core. Exits non-zero on any crash, leak, timeout
# or sanitizer report; the reproducer is left in WORK_DIR/artifacts. Long run: scripts/fuzz.sh 3600.
# Before fuzzing, every crash, leak, timeout and out-of-memory input left in WORK_DIR/artifacts by an earlier
# run is replayed: a known crash fails the run at once, however long the fuzzing would take to find it again.
# A fixed one passes and stays there as a regression input.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
work=${2:-$root/build-fuzz/work}
reader=${3:-hprof}
case "$reader" in
  hprof) fuzzer=hprof_fuzzer ;;
  phd) fuzzer=phd_fuzzer ;;
  text) fuzzer=text_dump_fuzzer ;;
  *) echo "fuzz.sh: READER must be hprof, phd or text" >&2; exit 2 ;;
esac
build=${HEAPWATCH_FUZZ_BUILD_DIR:-$root/build-fuzz}
corpora=${HEAPWATCH_CORPORA_DIR:-$root/../shared/corpora}

cmake -S "$root/collectors/dumps/fuzz" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$build" --target "$fuzzer" -j2

mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
if [ "$reader" = phd ] && [ -d "$corpora" ]; then
  i=0
  while IFS= read -r -d '' f; do
    for n in 4096 65536 262144; do
      head -c "$n" "$f" > "$work/seeds/phd-$i-$n"
    done
    i=$((i + 1))
  done < <(find "$corpora" -type f -name '*.phd' -print0)
elif [ "$reader" = text ]; then
  cp "$root"/tests/collectors/dumps/data/ibm_text/*.txt "$work/seeds/"
elif [ -d "$corpora" ]; then
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

# Replay the earlier findings (libFuzzer runs each file given as an argument once and exits non-zero on the
# first that still fails).
known=()
while IFS= read -r -d '' f; do known+=("$f"); done < <(find "$work/artifacts" -maxdepth 1 -type f \
  \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) -print0 | sort -z)
if ((${#known[@]} > 0)); then
  echo "fuzz.sh: replaying ${#known[@]} earlier finding(s) from $work/artifacts"
  if ! "$build/$fuzzer" -timeout=30 -rss_limit_mb=2560 -artifact_prefix="$work/artifacts/replay-" \
    "${known[@]}"; then
    echo "fuzz.sh: FAIL: an earlier fuzz finding in $work/artifacts still fails (see above)" >&2
    exit 1
  fi
fi

"$build/$fuzzer" -max_total_time="$seconds" -max_len=262144 -timeout=30 -rss_limit_mb=2560 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" "$work/seeds"
