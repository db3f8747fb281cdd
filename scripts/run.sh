#!/usr/bin/env bash
# Installs what is missing, builds, and starts heapwatchd in the foreground with its embedded defaults:
# it watches every local JVM, keeps data in ./data, serves gRPC on 127.0.0.1:7750 and metrics on
# 127.0.0.1:9750. Extra arguments are passed to heapwatchd.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/deps.sh"
bash "$root/scripts/build.sh"
build=${HEAPWATCH_BUILD_DIR:-$root/build}
exec "$build/daemon/heapwatchd" "$@"
