#!/usr/bin/env bash
# Crash torture: heapwatchd is killed with SIGKILL at random moments while it ingests histograms, takes and
# analyses extended dumps, and runs retention, then restarted on the same store; after every restart
# nothing it had acknowledged is lost and nothing is left half done (issue "Hardening", docs/storage-format.md).
#
# Usage: crash_torture.sh HEAPWATCHD HEAPWATCHCTL JAVA_SRC_DIR [KILLS]
#   KILLS (default $HEAPWATCH_TORTURE_KILLS or 8): how many kill -9 / restart rounds. The README's test
#   command runs the short form; the long form (100 kills) is documented in the README with its figures.
#
# One leaking JVM (LeakyApp, 256 KiB/s, so that 100 rounds stay far from its 256 MiB heap) is watched at a
# 1 s interval. Retention runs every second with a byte budget (256 KiB) small enough that it deletes the
# oldest snapshots and dump records during the run. The first round waits for its dump to finish, so that
# every later round checks a finished dump too. Each round:
#   1. start heapwatchd on the store; it must come up (LMDB needs no recovery step) and, before anything
#      new happens, list no extended dump as queued, dumping or analysing (interrupted ones are FAILED
#      with a reason) and no snapshot or finished dump of the previous round missing:
#        - every snapshot time of the tracked class seen over gRPC before the kill is still there, or is
#          older than every snapshot there now (retention deletes oldest first): no hole;
#        - every dump seen DONE before the kill is still DONE, or gone with its report (retention);
#   2. request an extended dump, wait a random 0-0.5 s (half of the rounds) or 0-2.5 s (the kill lands while
#      the JVM writes the dump, while it is analysed, while records are written, or during plain ingest),
#      read what is acknowledged (history and dumps over gRPC), wait a random 0-0.2 s more, kill -9.
# At the end, after a last clean restart and a quiet period: no raw dump or temporary file is left in the
# store's directory. Prints per-round what the kill interrupted and the totals.
set -euo pipefail
heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL JAVA_SRC_DIR [KILLS]}
heapwatchctl=${2:?}
java_src=${3:?}
kills=${4:-${HEAPWATCH_TORTURE_KILLS:-8}}
tracked_class='byte[]'

# shellcheck source=e2e_lib.sh
E2E_LOG_LINES=25 source "$(dirname "$0")/e2e_lib.sh" heapwatch-torture
mkdir -p "$tmp/classes" "$tmp/jar" "$tmp/data"
javac -d "$tmp/classes" "$java_src/LeakyApp.java" "$java_src/TestSupport.java"
jar --create --file "$tmp/jar/TortureApp.jar" --main-class LeakyApp -C "$tmp/classes" .
java -Xmx256m -jar "$tmp/jar/TortureApp.jar" --bytes-per-second 262144 >"$tmp/jvm.log" 2>&1 &
pids+=($!)

cat >"$tmp/heapwatchd.yml" <<EOF
watch:
  agents:
    include: ["$tmp/jar/*.jar"]
collection:
  interval: 1s
  discovery_interval: 500ms
  pause_budget: 0.5
retention:
  max_bytes: 262144
  check_interval: 1s
escalation:
  auto: false
  min_dump_interval: 0s
  keep_raw_dumps: false
EOF

daemon_pid=0
start_daemon() {
  rm -f "$tmp/grpc.port"
  "$heapwatchd" --config "$tmp/heapwatchd.yml" --data-dir "$tmp/data" --grpc-listen 127.0.0.1:0 \
    --metrics-listen 127.0.0.1:0 --grpc-port-file "$tmp/grpc.port" >>"$tmp/heapwatchd.log" 2>&1 &
  daemon_pid=$!
  pids+=("$daemon_pid")
  port=$(wait_port_file "$tmp/grpc.port" 30) || fail "heapwatchd did not start on the store (round $round)"
  ctl=("$heapwatchctl" --server "127.0.0.1:$port" --timeout 5s)
}

# Snapshot times of the tracked class (RFC 3339, one per line, sorted) and dumps ("id state" lines).
# (NOT_FOUND when retention deleted every snapshot of the class: then there are none.)
history_times() {
  { "${ctl[@]}" --json history "$agent" "$tracked_class" 2>/dev/null || echo '{}'; } |
    jq -r '.points[]?.time' | sort
}
dump_states() {
  "${ctl[@]}" --json reports "$agent" | jq -r '(.dumps // .extendedDumps // .extended_dumps)[]? |
    "\(.dumpId // .dump_id) \(.state)"' | sort
}

round=0
agent=""
start_daemon
for _ in $(seq 60); do
  agent=$("${ctl[@]}" --json agents | jq -r '.agents[0].agent // empty')
  [[ -n $agent ]] && [[ -n $(history_times) ]] && break
  sleep 0.5
done
[[ -n $agent ]] || fail "the JVM was not discovered"
log "agent $agent; $kills kill -9 rounds"

declare -A interrupted=() done_seen=()
lost=0 holes=0 stuck=0
for round in $(seq "$kills"); do
  # 2. a dump request and a kill at a random moment
  if ((round == 1)); then
    "${ctl[@]}" dump --wait --timeout 120s "$agent" >/dev/null 2>&1 || fail "the first dump did not finish"
  else
    "${ctl[@]}" dump "$agent" >/dev/null 2>&1 || true
  fi
  # Half of the rounds kill soon after the request (the dump is being written or analysed), half later.
  if ((RANDOM % 2)); then max_wait=0.5; else max_wait=2.5; fi
  sleep "$(awk -v r=$RANDOM -v m=$max_wait 'BEGIN { printf "%.2f", r / 32767 * m }')"
  history_times >"$tmp/acked_history" || true
  dump_states >"$tmp/acked_dumps" || true
  sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", r / 32767 * 0.2 }')"
  kill -9 "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
  newest_state=$(awk 'END { print $2 }' "$tmp/acked_dumps")
  while read -r id state; do [[ $state == *DONE* ]] && done_seen[$id]=1; done <"$tmp/acked_dumps"
  what=${newest_state:-none}
  interrupted[$what]=$((${interrupted[$what]:-0} + 1))

  # 1. restart and check
  start_daemon
  now_history=$(history_times)
  now_dumps=$(dump_states)
  oldest=$(head -n1 <<<"$now_history")
  missing=0
  while read -r t; do
    [[ -z $t ]] && continue
    grep -qxF "$t" <<<"$now_history" && continue
    [[ -n $oldest && $t < $oldest ]] && continue  # aged out by retention: oldest first
    missing=$((missing + 1))
  done <"$tmp/acked_history"
  ((missing == 0)) || { holes=$((holes + missing)); log "round $round: $missing acknowledged snapshots missing"; }
  while read -r id state; do
    [[ -z $id || $state != *DONE* ]] && continue
    after=$(awk -v id="$id" '$1 == id { print $2 }' <<<"$now_dumps")
    if [[ -n $after && $after != *DONE* ]]; then
      lost=$((lost + 1))
      log "round $round: dump $id was DONE, is $after after the restart"
    fi
  done <"$tmp/acked_dumps"
  active=$(grep -cE 'QUEUED|DUMPING|ANALYZING' <<<"$now_dumps" || true)
  if ((active > 0)); then
    stuck=$((stuck + active))
    log "round $round: after the restart: $(grep -E 'QUEUED|DUMPING|ANALYZING' <<<"$now_dumps" | tr '\n' ' ')"
  fi
  log "round $round: killed with the newest dump ${what}; $(wc -l <"$tmp/acked_history") snapshots" \
      "and $(wc -l <"$tmp/acked_dumps") dumps acknowledged before the kill; after restart" \
      "$(wc -l <<<"$now_history") snapshots, missing $missing"
done

# A last clean run: let everything settle, stop it gracefully, and look at what is on disk.
sleep 3
kill -TERM "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
# The store's files: LMDB's data.mdb and lock.mdb, and heapwatch.lock (one daemon per store).
files=(-type f ! -name data.mdb ! -name lock.mdb ! -name heapwatch.lock)
leftovers=$(find "$tmp/data" "${files[@]}" | wc -l)
if ((leftovers > 0)); then find "$tmp/data" "${files[@]}" >&2; fi
done_dumps=${#done_seen[@]}
deleted_snapshots=$({ grep -o 'retention by size deleted [0-9]* snapshots' "$tmp/heapwatchd.log" || true; } |
  awk '{ n += $5 } END { print n + 0 }')
summary=""
for k in "${!interrupted[@]}"; do summary+="$k=${interrupted[$k]} "; done
log "kills: $kills (newest dump at the kill: $summary); snapshots missing: $holes; DONE dumps lost: $lost;" \
    "dumps left active after a restart: $stuck; files left over: $leftovers; finished dumps checked: $done_dumps;" \
    "snapshots deleted by retention: $deleted_snapshots"
((holes == 0)) || fail "$holes acknowledged snapshots were lost"
((lost == 0)) || fail "$lost finished dumps were lost"
((stuck == 0)) || fail "$stuck dumps stayed active across a restart"
((leftovers == 0)) || fail "$leftovers raw dump or temporary files were left in the store's directory"
((done_dumps > 0)) || fail "no finished dump was ever checked across a kill"
ok=1
echo "PASS: crash torture ($kills kills)"
