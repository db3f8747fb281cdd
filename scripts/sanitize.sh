#!/usr/bin/env bash
# Builds the test suite with a sanitizer into its own build directory and runs it.
#   bash scripts/sanitize.sh asan [TEST_TARGET...]   AddressSanitizer + UndefinedBehaviorSanitizer
#                                                    (-fsanitize=address,undefined, aborting on the first
#                                                    report) into build-asan; runs the unit and
#                                                    integration tests (ctest), not the fuzz smoke runs
#                                                    (they have their own instrumented build)
#   bash scripts/sanitize.sh tsan [TEST_TARGET...]   ThreadSanitizer into build-tsan; runs the concurrent
#                                                    parts of the daemon: every test of daemon_test
#                                                    (scheduler, escalation, query server, metrics), the
#                                                    store's (group commit included), the record
#                                                    retention's and the agent gateway's
# TEST_TARGET (e.g. heapwatch_storage_test daemon_test) limits the build and the run to those test
# binaries; without, asan builds every target and runs every test but the fuzz runs.
# HEAPWATCH_SANITIZE_BUILD_DIR overrides the build directory; extra ctest arguments go in
# HEAPWATCH_CTEST_ARGS (e.g. "-R Retention"). Under asan, HEAPWATCH_TIME_SCALE (default 3) is exported:
# the end-to-end scripts multiply their bounds of the daemon's speed by it (tests/e2e/e2e_lib.sh
# hw_scaled), since the instrumented daemon and CLI run several times slower. Exits non-zero on a failed test or a sanitizer report.
# Suppressions: scripts/sanitizers/*.supp (each entry justified there). Third-party libraries (gRPC,
# protobuf, LMDB) come from Debian and are not instrumented, so TSan cannot see their
# synchronisation: reports inside them are the tool's blind spot, not ours.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: sanitize.sh asan|tsan [TEST_TARGET...]}
shift
targets=("$@")
case "$mode" in
  asan)
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
    export LSAN_OPTIONS="suppressions=$root/scripts/sanitizers/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
    export HEAPWATCH_TIME_SCALE=${HEAPWATCH_TIME_SCALE:-3}
    ;;
  tsan)
    flags="-fsanitize=thread -fno-omit-frame-pointer"
    # ignore_noninstrumented_modules=1: Debian's gRPC and absl are not built with TSan, so TSan sees
    # their memory accesses only through its interceptors (memmove, operator new/delete, epoll) and
    # none of their synchronisation (their atomics and spin locks); without this flag every gRPC test
    # reports races whose both stacks lie inside libgrpc/libabsl (seen: absl's GraphCycles, gRPC's
    # event engine fds, grpc_core::StatusAllocHeapPtr handed between its threads). With it, those
    # interceptor calls from uninstrumented code are not checked; every access of heapwatch's own
    # (instrumented) code still is.
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$root/scripts/sanitizers/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
    if ((${#targets[@]} == 0)); then
      targets=(daemon_test heapwatch_storage_test record_retention_test agent_gateway_test)
    fi
    ;;
  *) echo "sanitize.sh: mode must be asan or tsan" >&2; exit 2 ;;
esac
build=${HEAPWATCH_SANITIZE_BUILD_DIR:-$root/build-$mode}
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="${flags%% -fno-*}" -DHEAPWATCH_BUILD_BENCH=OFF \
  >/dev/null
nice -n 5 cmake --build "$build" -j2 ${targets[@]:+--target "${targets[@]}"}

exclude='_fuzz_smoke$'
if [ "$mode" = asan ]; then
  # Not a finding, a property of this build: the test checks that the Containerfile's runtime stage
  # installs the Debian package of every library heapwatchd links, and an instrumented heapwatchd
  # links libasan8 and libubsan1, which the release image rightly does not ship (seen failing only for
  # those two on 2026-11-24).
  exclude+='|^deploy\.DeployFiles\.ContainerRuntimePackagesProvideEveryLinkedLibrary$'
fi
if [ "$mode" = tsan ]; then
  # Too slow under TSan, not failing: RealDiskFull appends snapshots until a 6 MiB tmpfs is full
  # (6.6 s in the normal build); under TSan it needs ~150 s (it passed, without a report, in 146 s run
  # directly on 2026-11-24) and ctest's 120 s per-test timeout stops it. It runs single-threaded, so
  # TSan has nothing to check there that the other Durability tests do not; the normal and ASan runs
  # keep it.
  exclude+='|^DurabilityTest\.RealDiskFullIsResourceExhaustedAndHeals$'
fi
ctest_args=(--output-on-failure -E "$exclude")
if ((${#targets[@]} > 0)); then
  # Only the tests of the named binaries (gtest_discover_tests names tests Suite.Case; a binary's tests
  # are found by listing them).
  names=()
  for t in "${targets[@]}"; do
    exe=$(find "$build/tests" -type f -name "$t" -perm -u+x | head -n 1)
    [ -n "$exe" ] || { echo "sanitize.sh: no test binary $t" >&2; exit 2; }
    while IFS= read -r suite; do names+=("^${suite}"); done < <("$exe" --gtest_list_tests |
      grep -v '^ ' | sed 's/\..*//' | sort -u)
  done
  # Every suite of those binaries (a hand-picked list had missed GroupCommitTest, the store's only
  # test with many threads appending at once).
  regex=$(IFS='|'; echo "${names[*]}")
  ctest_args+=(-R "$regex")
fi
# shellcheck disable=SC2086
ctest --test-dir "$build" "${ctest_args[@]}" ${HEAPWATCH_CTEST_ARGS:-}
