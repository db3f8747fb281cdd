#!/usr/bin/env bash
# End to end: heapwatchd does its whole job with exactly the capabilities its systemd unit grants, and
# each of them is needed (docs/deployment.md).
#
# Usage: capabilities_e2e.sh HEAPWATCHD HEAPWATCHCTL UNIT_FILE JAVA_SRC_DIR
#
# Reads CapabilityBoundingSet from UNIT_FILE and runs heapwatchd the way systemd runs the unit (as root, in a
# mount namespace of its own with / read-only and /tmp shared, under setpriv with that bounding set, no
# ambient or inheritable capabilities, no_new_privs) against a fresh JVM of user `nobody`:
#   - with every capability of the unit: the JVM is discovered, class histograms are collected, an
#     extended dump is written, analysed and its raw file deleted;
#   - with each capability removed in turn: the step that needs it fails, and the test checks that it
#     fails (so the unit lists no capability the daemon does not use).
# Needs root (exit 77: skipped otherwise). About 6 s per daemon run.
set -euo pipefail
heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL UNIT_FILE JAVA_SRC_DIR}
heapwatchctl=${2:?}
unit=${3:?}
java_src=${4:?}
if [[ $(id -u) != 0 ]]; then echo "SKIP: needs root"; exit 77; fi
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }

# shellcheck source=../e2e/e2e_lib.sh
source "$(dirname "$0")/../e2e/e2e_lib.sh" heapwatch-caps-e2e
chmod 755 "$tmp"
mkdir -p "$tmp/classes" "$tmp/jar"
javac -d "$tmp/classes" "$java_src/SteadyApp.java" "$java_src/TestSupport.java"
jar --create --file "$tmp/jar/CapsApp.jar" --main-class SteadyApp -C "$tmp/classes" .
chmod -R a+rX "$tmp/jar"

# CAP_FOO names from the unit, lower case without the prefix for setpriv.
read -r -a unit_caps <<<"$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")"
((${#unit_caps[@]} > 0)) || fail "no CapabilityBoundingSet in $unit"
caps=()
for c in "${unit_caps[@]}"; do caps+=("$(tr '[:upper:]' '[:lower:]' <<<"${c#CAP_}")"); done
log "unit grants: ${caps[*]}"

run=0
# try KEEP...: starts a nobody JVM and a daemon with only the capabilities KEEP; sets found (agent id or
# empty), collected (1 if a histogram was stored), dump_state (done/failed/none), dump_error, leftover
# (raw dump files left in the store after the dump finished).
try() {
  run=$((run + 1))
  local d=$tmp/run$run bounding=-all c
  mkdir -p "$d/data"
  for c in "$@"; do bounding+=",+$c"; done
  cat >"$d/heapwatchd.yml" <<Y
watch:
  agents:
    include: ["$tmp/jar/*.jar"]
collection:
  interval: 1s
  discovery_interval: 500ms
  pause_budget: 0.5
escalation:
  auto: false
  min_dump_interval: 1s
Y
  runuser -u nobody -- java -Xmx64m -jar "$tmp/jar/CapsApp.jar" --live-mb 8 >"$d/jvm.log" 2>&1 &
  local jvm=$!
  pids+=("$jvm")
  # As systemd runs the unit (ProtectSystem=strict, ReadWritePaths=/tmp, the store below /tmp here): a
  # mount namespace of its own with / read-only and /tmp shared, then the capability bounding set.
  unshare --mount -- sh -c 'mount --make-rprivate / && mount --bind /tmp /tmp &&
      mount -o remount,bind,ro / && exec "$0" "$@"' \
    setpriv --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set="$bounding" -- \
    "$heapwatchd" --config "$d/heapwatchd.yml" --data-dir "$d/data" --grpc-listen 127.0.0.1:0 \
    --metrics-listen 127.0.0.1:0 --grpc-port-file "$d/grpc.port" >"$tmp/heapwatchd-run$run.log" 2>&1 &
  local daemon=$!
  pids+=("$daemon")
  local port
  port=$(wait_port_file "$d/grpc.port" 20) || fail "run $run: heapwatchd did not start"
  local ctl=("$heapwatchctl" --server "127.0.0.1:$port")
  found="" collected=0 dump_state=none dump_error="" leftover=0
  local agents i
  for i in $(seq 24); do  # up to 6 s for discovery (every 0.5 s) and a first histogram (every 1 s)
    agents=$("${ctl[@]}" --json agents)
    found=$(jq -r '.agents[0].agent // empty' <<<"$agents")
    if [[ -n $found && $(jq -r '.agents[0].last_snapshot_time // empty' <<<"$agents") != "" ]]; then
      collected=1
      break
    fi
    # An attach that failed for lack of a capability is reported at once (the daemon retries with
    # backoff; waiting would not change the outcome).
    [[ -n $(jq -r '.agents[0].last_error // empty' <<<"$agents") ]] && break
    sleep 0.25
  done
  if ((collected)); then
    local out
    out=$("${ctl[@]}" dump --wait --timeout 60s "$found" 2>&1) || true
    if grep -q ' done (' <<<"$out"; then dump_state=done; elif grep -q ' failed (' <<<"$out"; then
      dump_state=failed
      dump_error=$(grep -m1 'error:' <<<"$out" || true)
    fi
    leftover=$(find "$d/data/dumps" -type f 2>/dev/null | wc -l)
  fi
  log "run $run (${*:-no capabilities}): found=${found:-none} collected=$collected dump=$dump_state" \
      "leftover=$leftover ${dump_error}"
  kill "$daemon" "$jvm" 2>/dev/null || true
  wait "$daemon" 2>/dev/null || true
  wait "$jvm" 2>/dev/null || true
}

try "${caps[@]}"
[[ -n $found ]] || fail "with the unit's capabilities the JVM of nobody was not discovered"
((collected)) || fail "with the unit's capabilities no class histogram was collected"
[[ $dump_state == done ]] || fail "with the unit's capabilities the extended dump did not finish: $dump_error"
((leftover == 0)) || fail "with the unit's capabilities the raw dump was left on disk"

# What the daemon says when a capability is missing (a JVM that silently is not watched would leave the
# SRE guessing). Without dac_override the JVM's 0600 hsperfdata file cannot be read: that is logged after
# several discovery rounds, longer than a run here lasts, so it is not checked.
declare -A says=([sys_ptrace]="lacks CAP_SYS_PTRACE" [setuid]="switching to uid" [setgid]="switching to uid"
  [chown]="fchown(" [fowner]="fchmod(")
for drop in "${caps[@]}"; do
  keep=()
  for c in "${caps[@]}"; do [[ $c == "$drop" ]] || keep+=("$c"); done
  try "${keep[@]}"
  if [[ -n $found ]] && ((collected)) && [[ $dump_state == done ]] && ((leftover == 0)); then
    fail "without $drop heapwatchd still did everything: the unit should not grant it"
  fi
  if [[ -n ${says[$drop]:-} ]]; then
    grep -qF "${says[$drop]}" "$tmp/heapwatchd-run$run.log" ||
      fail "without $drop the daemon's log does not say '${says[$drop]}'"
  fi
  log "without $drop: fails as expected"
done
ok=1
echo "PASS: capabilities (${caps[*]}) each needed"
