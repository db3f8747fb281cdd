#!/usr/bin/env bash
# Installs every Debian 12 package heapwatch needs to build, test and run. Idempotent; needs root.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  liblmdb-dev lmdb-utils prometheus-cpp-dev libspdlog-dev libfmt-dev libcli11-dev libyaml-cpp-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev libboost-graph-dev nlohmann-json3-dev
  clang libclang-rt-14-dev
  openjdk-17-jdk-headless prometheus
  jq curl systemd util-linux
  libssl-dev
  tomcat10 jetty9 wrk
  # The web pages (web/): the HTTP server library, and a headless browser for their tests.
  libcivetweb-dev chromium
  # tests/e2e/crash_torture.sh: the watcher that kills heapwatchd on a retention pass's first log line.
  python3
  # tests/agent (AgentTlsTest): the openssl tool makes the test CA and certificates.
  openssl
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "heapwatch: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
  # Tomcat and Jetty are here for the end-to-end tests, which start their own servers on free ports: the
  # system services the packages start on installation (both on port 8080) are stopped and disabled again.
  for service in tomcat10 jetty9; do
    if [[ " ${missing[*]} " == *" $service "* ]] && command -v systemctl >/dev/null &&
       systemctl is-enabled --quiet "$service" 2>/dev/null; then
      systemctl disable --now "$service" >/dev/null 2>&1 || true
    fi
  done
fi
