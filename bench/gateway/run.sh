#!/usr/bin/env bash
# Load benchmark of the agent gateway (docs/agents.md, "Load"): starts heapwatchd with a fresh store
# and --agent-listen on loopback, runs AGENTS simulated agents each sending a CLASSES-class histogram
# per second for SECONDS, and reports histograms/s acknowledged (= stored durably), ack latency, lost
# deliveries, the daemon's CPU (user+system seconds per second) and peak RSS, and the snapshots the
# store holds afterwards (must equal the acknowledged deliveries, registration histograms included).
#
# Usage: bench/gateway/run.sh [AGENTS=1000] [CLASSES=3000] [SECONDS=120] [CONNECTIONS=AGENTS]
#                             [MODE=realistic]
# Each simulated agent has its own thread and stream (a real agent's independence); CONNECTIONS is
# how many gRPC connections they share (default one each, as agents in separate JVMs).
# MODE: realistic (stable class set, counts drifting, a few classes growing) or random (every count
# drawn anew each time: the worst case); see bench/gateway/agent_load.cc.
# Needs a build in $HEAPWATCH_BUILD_DIR (default build/) with heapwatchd, heapwatchctl and
# heapwatch_agent_load.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${HEAPWATCH_BUILD_DIR:-$root/build}
agents=${1:-1000} classes=${2:-3000} seconds=${3:-120} connections=${4:-${1:-1000}}
mode=${5:-realistic}
work=$(mktemp -d /tmp/heapwatch-gw-load-XXXXXX)
trap 'kill "$daemon" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/config.yaml" <<YAML
data_dir: $work/data
grpc_listen: 127.0.0.1:0
metrics_listen: 127.0.0.1:0
grpc_port_file: $work/grpc.port
log_level: warn
watch:
  agents: {include: ["heapwatch-load-bench-watches-no-local-jvm"]}
escalation: {enabled: false}
agents:
  listen: 127.0.0.1:0
  port_file: $work/agent.port
  max_connected: $((agents + 64))
YAML
"$build/daemon/heapwatchd" --config "$work/config.yaml" &
daemon=$!
for _ in $(seq 100); do [ -s "$work/agent.port" ] && break; sleep 0.1; done
port=$(cat "$work/agent.port")
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$daemon/stat"; }
cpu0=$(cpu); t0=$(date +%s.%N)
"$build/bench/gateway/heapwatch_agent_load" "127.0.0.1:$port" "$agents" "$classes" "$seconds" "$connections" "$mode" || status=$?
cpu1=$(cpu); t1=$(date +%s.%N)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$daemon/status")
# What the resident memory is: anonymous (heap) or file pages (the LMDB map, libraries).
awk '/^Rss|^Anonymous/ {printf "%s %d MiB  ", $1, $2 / 1024} END {print ""}' "/proc/$daemon/smaps_rollup" || true
echo "daemon CPU: $(echo "($cpu1 - $cpu0) / $ticks / ($t1 - $t0)" | bc -l | cut -c1-5) cores (user+system, whole run incl. registration)"
echo "daemon peak RSS: $((hwm / 1024)) MiB"
grpc=$(cat "$work/grpc.port")
echo "stored (must equal 'acked in total'):"
stored=$("$build/ctl/heapwatchctl" --server "127.0.0.1:$grpc" store 2>/dev/null | grep -i snapshot || true)
echo "$stored"
n=$(echo "$stored" | awk '/^snapshots/ {print $2; exit}')
if [ -n "$n" ] && [ "$n" -gt 0 ]; then
  # CPU per stored histogram: robust to other load on the machine (the histograms/s figure is not).
  echo "daemon CPU per stored histogram: $(echo "($cpu1 - $cpu0) * 1000 / $ticks / $n" | bc -l | cut -c1-5) ms"
fi
exit "${status:-0}"
