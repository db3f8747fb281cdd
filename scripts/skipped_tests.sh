#!/usr/bin/env bash
# Prints every test of the last ctest run in BUILD_DIR that was skipped, with the reason the test gave
# (GoogleTest's GTEST_SKIP() message), from ctest's own log (Testing/Temporary/LastTest.log). Prints
# "skipped tests: none" when nothing was skipped. Always exits 0: it reports, it does not judge.
set -uo pipefail
build=${1:?usage: $0 BUILD_DIR}
log="$build/Testing/Temporary/LastTest.log"
[[ -f $log ]] || { echo "skipped tests: no ctest log at $log"; exit 0; }
awk '
  /^[0-9]+\/[0-9]+ Test: / { name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name); reason = ""; grab = 0; next }
  /: Skipped$/ { grab = 1; next }
  grab && /^\[  SKIPPED \]/ { grab = 0; next }
  grab { reason = reason (reason == "" ? "" : " ") $0; next }
  /^Skip regular expression found in output/ { n++; lines[n] = "  " name ": " (reason == "" ? "(no reason given)" : reason) }
  END {
    if (n == 0) { print "skipped tests: none"; exit }
    print "skipped tests (" n "):"
    for (i = 1; i <= n; i++) print lines[i]
  }' "$log"
