#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, integration with real JVMs, LMDB, gRPC and
# Prometheus, promtool rule tests, the bounded fuzz run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/deps.sh"
bash "$root/scripts/build.sh"
build=${HEAPWATCH_BUILD_DIR:-$root/build}
cd "$build"
rc=0
ctest --output-on-failure -j2 --timeout 1200 "$@" || rc=$?
# Which tests did not run here, and why (e.g. no JDK 25 on this machine: docs/attach-protocol.md).
bash "$root/scripts/skipped_tests.sh" "$build"
exit "$rc"
