#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, integration with real JVMs, LMDB, gRPC and
# Prometheus, promtool rule tests, the bounded fuzz run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/deps.sh"
bash "$root/scripts/build.sh"
build=${HEAPWATCH_BUILD_DIR:-$root/build}
cd "$build"
ctest --output-on-failure -j2 --timeout 1200 "$@"
