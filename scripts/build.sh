#!/usr/bin/env bash
# Configures and builds heapwatch into build/ (or $HEAPWATCH_BUILD_DIR) with every target.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HEAPWATCH_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${HEAPWATCH_BUILD_TYPE:-RelWithDebInfo}
cmake --build "$build" -j"$(nproc)"
