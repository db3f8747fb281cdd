#!/usr/bin/env bash
# Fuzzes one parser with libFuzzer for a bounded time.
#   scripts/fuzz.sh [SECONDS=60] [WORK_DIR=build-fuzz/work] [TARGET=hprof]
# TARGET, the dump readers (collectors/dumps/fuzz):
#   hprof   HPROF; seeds: prefixes of the corpora's HPROF files and of a gzip-compressed one
#   phd     IBM Portable Heap Dumps; seeds: the corpora's .phd files, whole or as prefixes
#   text    IBM text heap dumps; seeds: the hand-written files of tests/collectors/dumps/data/ibm_text
# and the other parsers (fuzz/; seeds in fuzz/seeds/TARGET, captured from real JDK 17 and 25 JVMs
# where a JVM is involved):
#   attach_reply     raw attach-protocol replies -> jcmd result -> class histogram (collectors/attach.h)
#   class_histogram  GC.class_histogram text, every JDK format (collectors/class_histogram.h)
#   perf_data        hsperfdata files (collectors/perf_data.h)
#   config           heapwatchd's YAML configuration and durations (daemon/config.h)
#   time_arg         heapwatchctl's time arguments (ctl/time_arg.h)
#   query_server     serialized gRPC requests into the query service over a real store
#                    (daemon/query_server.h)
#   tokens           heapwatchd's API tokens file (auth/tokens.h); seeds: valid files with each role,
#                    comments, CRLF, tabs, and one file per error the parser reports
#   agent_messages   what registered agents send the agent gateway: framed AgentMessage streams
#                    (daemon/agent_messages.h); seeds: a Register, histograms with a class dictionary, a
#                    live set
#   agent_options    the in-process agent's option string (agent/options.h; no file is read); seeds:
#                    the option strings of docs/agent.md, the README and the agent's tests
#   agent_daemon_messages  what the agent accepts from the daemon: DaemonMessages and upload positions
#                    (agent/daemon_messages.h); seeds: the messages daemon/agent_gateway.cc sends, as
#                    one session script (fuzz/seeds/agent_daemon_messages/make_seeds.py)
# Builds the fuzz project fuzz/ (the whole project compiled by clang with -fsanitize=fuzzer-no-link,
# address,undefined; each target links only the modules it needs) into $HEAPWATCH_FUZZ_BUILD_DIR
# (default build-fuzz), seeds a corpus (the dump readers' seeds are generated in WORK_DIR from
# HEAPWATCH_CORPORA_DIR, default ../shared/corpora, never copied into the repository), then runs the
# fuzzer on one core. Limits per input: the dump readers -timeout=30 -rss_limit_mb=2560 (inputs up to
# 256 KiB), the other parsers -timeout=10 -rss_limit_mb=2048 (inputs up to 20 KiB, 64 KiB for hsperfdata). Exits non-zero on
# any crash, leak, timeout, out-of-memory or sanitizer report; the reproducer is left in
# WORK_DIR/artifacts. Every target for a long time: scripts/fuzz_long.sh.
# Before fuzzing, every crash, leak, timeout and out-of-memory input left in WORK_DIR/artifacts by an earlier
# run is replayed: a known crash fails the run at once, however long the fuzzing would take to find it again.
# A fixed one passes and stays there as a regression input.
# HEAPWATCH_FUZZ_RUNS=N stops after N inputs instead of after SECONDS; with HEAPWATCH_FUZZ_RUNS_CAPPED=1
# as well, after N inputs or SECONDS, whichever comes first (scripts/fuzz_long.sh's fair share).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
work=${2:-$root/build-fuzz/work}
reader=${3:-hprof}
limits=(-timeout=10 -rss_limit_mb=2048 -max_len=65536)
case "$reader" in
  hprof) fuzzer=hprof_fuzzer ;;
  phd) fuzzer=phd_fuzzer ;;
  text) fuzzer=text_dump_fuzzer ;;
  attach_reply | class_histogram | perf_data | config | time_arg | query_server | tokens | agent_messages \
    | agent_options | agent_daemon_messages)
    fuzzer=${reader}_fuzzer ;;
  *)
    echo "fuzz.sh: TARGET must be hprof, phd, text, attach_reply, class_histogram, perf_data," \
      "config, time_arg, query_server, tokens, agent_messages, agent_options or" \
      "agent_daemon_messages" >&2
    exit 2 ;;
esac
# Longest input: what the seeds need (a real hsperfdata file is 32 KiB), no more: longer inputs only
# make every execution slower.
case "$reader" in
  hprof | phd | text) limits=(-timeout=30 -rss_limit_mb=2560 -max_len=262144) ;;
  attach_reply | class_histogram | config) limits[2]=-max_len=20000 ;;
  # A few dozen token lines; longer inputs only repeat what a line can hold (a line is at most 1 KiB).
  tokens) limits[2]=-max_len=8192 ;;
  time_arg) limits[2]=-max_len=256 ;;
  query_server) limits[2]=-max_len=4096 ;;
  # A handful of frames: a Register and a few histograms of some dozen classes.
  agent_messages) limits[2]=-max_len=8192 ;;
  # Just past the parser's own 8192-byte bound, so that the bound itself is exercised.
  agent_options) limits[2]=-max_len=8400 ;;
  # A session of a few dozen messages (a DumpRequest's id is at most 64 bytes; longer ones only
  # repeat the same refusal).
  agent_daemon_messages) limits[2]=-max_len=4096 ;;
esac
build=${HEAPWATCH_FUZZ_BUILD_DIR:-$root/build-fuzz}
# LeakSanitizer suppressions (each says why the report is not heapwatch's): libFuzzer checks for leaks
# after inputs, also inside gRPC's own threads (the query_server target).
export LSAN_OPTIONS="suppressions=$root/scripts/sanitizers/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
corpora=${HEAPWATCH_CORPORA_DIR:-$root/../shared/corpora}

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
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
elif [ -d "$root/fuzz/seeds/$reader" ]; then
  find "$root/fuzz/seeds/$reader" -maxdepth 1 -type f ! -name '*.py' -exec cp {} "$work/seeds/" \;
elif [ "$reader" = hprof ] && [ -d "$corpora" ]; then
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
  if ! "$build/$fuzzer" "${limits[@]}" -artifact_prefix="$work/artifacts/replay-" \
    "${known[@]}"; then
    echo "fuzz.sh: FAIL: an earlier fuzz finding in $work/artifacts still fails (see above)" >&2
    exit 1
  fi
fi

stop=(-max_total_time="$seconds")
if [ -n "${HEAPWATCH_FUZZ_RUNS:-}" ]; then
  stop=(-runs="$HEAPWATCH_FUZZ_RUNS")
  if [ "${HEAPWATCH_FUZZ_RUNS_CAPPED:-}" = 1 ]; then stop+=(-max_total_time="$seconds"); fi
fi
"$build/$fuzzer" "${stop[@]}" "${limits[@]}" -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$work/seeds"
