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
# 100 ms interval. Retention runs every second with a byte budget just over what the store uses once the
# first dump is done, so that it deletes the oldest snapshots, and the dumps older than them or over
# their kind's share, during the run. The first round waits for its dump to finish, so that every later
# round checks a finished dump too. Each round:
#   1. start heapwatchd on the store; it must come up (LMDB needs no recovery step) and, before anything
#      new happens, list no extended dump as queued, dumping or analysing (interrupted ones are FAILED
#      with a reason) and no snapshot or finished dump of the previous round missing:
#        - every snapshot time of the tracked class seen over gRPC before the kill is still there, or is
#          older than every snapshot there now (retention deletes oldest first): no hole;
#        - every dump seen DONE before the kill is still DONE, or was deleted by record retention
#          (older than every dump listed now, and no more than the passes logged);
#        - the store's dump records, reports and summaries match the dump list (one record per dump,
#          one report per report class, one summary per DONE dump): none without the others;
#   2. request an extended dump, wait a random 0-0.5 s (half of the rounds) or 0-2.5 s (the kill lands while
#      the JVM writes the dump, while it is analysed, while records are written, or during plain ingest),
#      read what is acknowledged (history and dumps over gRPC), wait a random 0-0.2 s more, kill -9;
#      or, in rounds 3, 7, 11, ...: restart with a budget well under the store's use, read what is
#      acknowledged, and kill -9 as soon as the log says the first retention pass deletes snapshots
#      (the round classifies the kill as inside the deletion when the pass's end line is missing).
#   Before each kill, once a retention pass ran since the start: the store uses at most its budget
#   (+16 KiB for the commits since the pass).
# At the end, after a last clean restart: no raw dump or temporary file is left in the store's
# directory, and retention deleted snapshots. Prints per-round what the kill interrupted and the totals.
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

# The store's budget: 1 GiB until the first dump is done, then what the store uses at that moment plus
# 8 KiB (two LMDB pages), so that the snapshots of the following seconds push it over and every few
# retention passes from then on delete the oldest snapshots (and the dumps older than them) while the
# kills go on. A fixed budget would depend on the JDK (its class names fill most of the store) and on
# how many dumps were analysed; with 256 KiB the long run of session 7 kept all its 183 snapshots
# (their deltas are ~200 bytes; the dump records are held to their shares of the budget).
write_config() {  # BUDGET [CHECK_INTERVAL=1s]
  cat >"$tmp/heapwatchd.yml" <<EOF
watch:
  agents:
    include: ["$tmp/jar/*.jar"]
collection:
  interval: 100ms
  discovery_interval: 500ms
  pause_budget: 0.5
retention:
  max_bytes: $1
  check_interval: ${2:-1s}
escalation:
  auto: false
  min_dump_interval: 0s
  keep_raw_dumps: false
EOF
}
write_config 1GiB

daemon_pid=0
start_daemon() {  # e2e_lib.sh; fails the test when the daemon does not come up on the store
  hw_start_daemon "$heapwatchd" "$heapwatchctl" "$tmp/heapwatchd.yml" "$tmp/data"
  daemon_pid=$hw_daemon_pid
  ctl=("${hw_ctl[@]}")
}

# Snapshot times of the tracked class (RFC 3339, one per line, sorted) and dumps ("id state" lines).
# (NOT_FOUND when retention deleted every snapshot of the class: then there are none.)
history_times() { hw_history_times "$agent" "$tracked_class"; }
dump_states() { hw_dump_states "$agent"; }
# The store's record counts against the dumps listed: "dump_records reports summaries" from the store's
# statistics, then the same three counted from the dump list (one dump record per dump, one report per
# class in its report_classes, one summary per DONE dump). Read again (up to 5 times) when they differ, so
# that a retention pass deleting between the two reads is not taken for an inconsistency.
counts_of_store() {
  "${ctl[@]}" --json store | jq -r '[.kinds[] | {(.kind): (.records | tonumber)}] | add |
    "\(.dump_records) \(.reports) \(.summaries)"'
}
counts_of_list() {
  "${ctl[@]}" --json reports "$agent" | jq -r '[(.dumps // [])[]] | "\(length) \([.[] |
    (.report_classes // []) | length] | add // 0) \([.[] | select(.state | test("DONE"))] | length)"'
}
# The reads of one check run at once (each is a heapwatchctl process): the short form must stay as
# fast as before the checks were added. in_parallel FILE COMMAND [FILE COMMAND ...]: each COMMAND's
# output into its FILE, waiting for all.
in_parallel() {
  local jobs=()
  while (($# > 0)); do
    { $2 >"$1" || true; } &
    jobs+=($!)
    shift 2
  done
  wait "${jobs[@]}" || true
}
record_counts() {
  local stored listed
  for _ in 1 2 3 4 5; do
    in_parallel "$tmp/counts_store" counts_of_store "$tmp/counts_list" counts_of_list
    stored=$(<"$tmp/counts_store")
    listed=$(<"$tmp/counts_list")
    [[ $stored == "$listed" ]] && break
    sleep 0.2  # a retention pass may have deleted between the two reads: read again
  done
  echo "$stored / $listed"
}
# The store's "used max" bytes once a retention pass ran since the start, else nothing.
used_after_pass() { if retention_passed; then store_used; fi; }
count_lines() { if [[ -z $1 ]]; then echo 0; else wc -l <<<"$1"; fi; }
store_used() { "${ctl[@]}" --json store | jq -r '"\(.used_bytes) \(.max_bytes)"'; }
retention_passed() { [[ $(hw_metric 'heapwatch_retention_runs_total{result="ok"}') -ge 1 ]]; }

# kill_on_retention FIRST_LINE SECONDS: kills the daemon with SIGKILL as soon as its log, from line
# FIRST_LINE on, says that a retention pass deletes snapshots (storage/retention.cc logs it before the
# pass's first deletion commits). A pass takes 1-30 ms here, less than a shell pipeline needs to react
# on a loaded machine, so a small Python loop at a raised priority (when run as root) polls the log
# every 0.5 ms and sends the signal itself. Fails after SECONDS without such a line.
kill_on_retention() {
  nice -n -10 python3 - "$tmp/heapwatchd.log" "$1" "$2" "$daemon_pid" 2>/dev/null <<'PY'
import os, signal, sys, time
path, first, seconds, pid = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
with open(path, "rb") as f:
    for _ in range(first - 1):
        f.readline()
    end, pending = time.monotonic() + seconds, b""
    while time.monotonic() < end:
        chunk = f.read()
        if chunk:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if any(b"retention by size: " in line for line in lines):
                os.kill(pid, signal.SIGKILL)
                sys.exit(0)
        else:
            time.sleep(0.0005)
sys.exit(1)
PY
}

round=0
agent=""
start_line=1
start_daemon
for _ in $(seq 60); do
  agent=$("${ctl[@]}" --json agents | jq -r '.agents[0].agent // empty')
  [[ -n $agent ]] && [[ -n $(history_times) ]] && break
  sleep 0.5
done
[[ -n $agent ]] || fail "the JVM was not discovered"
log "agent $agent; $kills kill -9 rounds"

declare -A interrupted=() done_seen=()
aged_out=0 lost=0 holes=0 stuck=0 inconsistent=0 over_budget=0 budget_checks=0 dumps_aged=0 in_deletion=0 retention_rounds=0
budget=0
for round in $(seq "$kills"); do
  # 2. a dump request and a kill at a random moment, or (rounds 3, 7, 11, ...) on a retention pass
  log_line=$(($(wc -l <"$tmp/heapwatchd.log") + 1))
  if ((round == 1)); then
    "${ctl[@]}" dump --wait --timeout 120s "$agent" >/dev/null 2>&1 || fail "the first dump did not finish"
    read -r used _ < <(store_used)
    budget=$((used + 8192))
    write_config "$budget"
    log "the first dump is done; the store uses $used bytes: budget $budget bytes from the next start"
  elif ((round % 4 != 3)); then
    "${ctl[@]}" dump "$agent" >/dev/null 2>&1 || true
  fi
  on_retention=0
  if ((round % 4 == 3)); then
    # Killed as soon as a retention pass says it deletes snapshots (storage/retention.cc logs it before
    # the first deletion commits). What was acknowledged is read first.
    on_retention=1
    retention_rounds=$((retention_rounds + 1))
    in_parallel "$tmp/acked_history" history_times "$tmp/acked_dumps" dump_states
    kill_on_retention "$start_line" 10 ||
      log "round $round: no retention pass deleted snapshots within 10 s; killed anyway"
  else
    # Half of the rounds kill soon after the request (the dump is being written or analysed), half later.
    if ((RANDOM % 2)); then max_wait=0.5; else max_wait=2.5; fi
    sleep "$(awk -v r=$RANDOM -v m=$max_wait 'BEGIN { printf "%.2f", r / 32767 * m }')"
    in_parallel "$tmp/acked_history" history_times "$tmp/acked_dumps" dump_states \
      "$tmp/used_after_pass" used_after_pass
    sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", r / 32767 * 0.2 }')"
  fi
  # Once a retention pass ran since the restart the store is under its budget (within 16 KiB: the
  # pages the collections' commits since the pass may have added to the snapshot, live-set,
  # class-loading and dictionary tables). Read before the kill, so that no round waits for a pass.
  used=-1 max=-1
  if ((on_retention == 0)) && [[ -s $tmp/used_after_pass ]]; then
    read -r used max <"$tmp/used_after_pass"
    budget_checks=$((budget_checks + 1))
    if ((used > max + 16384)); then
      over_budget=$((over_budget + 1))
      log "round $round: the store uses $used bytes after a retention pass; budget $max"
    fi
  fi
  # Before a retention round the daemon restarts with a budget under what the store uses now by more
  # than the dump records can free (their pages, plus one a kind) and one page more, so that its first
  # retention pass (about 1 s after the start, after the restart's checks and the acknowledged reads)
  # deletes the oldest snapshots after the records over their shares. The round after it starts with
  # the usual budget again.
  if (((round + 1) % 4 == 3)); then
    write_config "$("${ctl[@]}" --json store | jq -r '(.kinds | map({(.kind): (.bytes | tonumber)}) | add)
      as $k | ([$k.dump_records, $k.reports, $k.summaries] | map((. + 4095) / 4096 | floor | . + 1) |
      add * 4096) as $records | (.used_bytes | tonumber) - $records - 4096')" 1s
  else
    write_config "$budget"
  fi
  kill -9 "$daemon_pid" 2>/dev/null || true  # (already killed in a retention round)
  wait "$daemon_pid" 2>/dev/null || true
  # Did the kill land inside a deleting pass: its first line logged, its "deleted N snapshots" not?
  during=$(tail -n "+$log_line" "$tmp/heapwatchd.log" | awk '/retention by size: / { open = 1 }
    /retention by size deleted/ { open = 0 } END { print open + 0 }')
  in_deletion=$((in_deletion + during))
  newest_state=$(awk 'END { print $2 }' "$tmp/acked_dumps")
  while read -r id state; do [[ $state == *DONE* ]] && done_seen[$id]=1; done <"$tmp/acked_dumps"
  what=${newest_state:-none}
  ((during == 0)) || what=retention_deletion
  interrupted[$what]=$((${interrupted[$what]:-0} + 1))

  # 1. restart and check
  start_line=$(($(wc -l <"$tmp/heapwatchd.log") + 1))
  start_daemon
  in_parallel "$tmp/now_history" history_times "$tmp/now_dumps" dump_states
  now_history=$(<"$tmp/now_history")
  now_dumps=$(<"$tmp/now_dumps")
  oldest=$(head -n1 <<<"$now_history")
  # With no snapshot left, every acknowledged one must have been deleted by retention: no more than
  # the passes since the round began said they deleted (the tracked class is in every snapshot).
  snapshots_deleted_now=$(tail -n "+$log_line" "$tmp/heapwatchd.log" |
    { grep -o 'retention by size deleted [0-9]* snapshots' || true; } | awk '{ n += $5 } END { print n + 0 }')
  missing=0 aged=0
  while read -r t; do
    [[ -z $t ]] && continue
    grep -qxF "$t" <<<"$now_history" && continue
    if [[ -n $oldest && $t < $oldest ]]; then aged_out=$((aged_out + 1)); continue; fi  # oldest first
    if [[ -z $oldest ]] && ((aged < snapshots_deleted_now)); then
      aged=$((aged + 1))
      aged_out=$((aged_out + 1))
      continue
    fi
    missing=$((missing + 1))
  done <"$tmp/acked_history"
  ((missing == 0)) || { holes=$((holes + missing)); log "round $round: $missing acknowledged snapshots missing"; }
  # A DONE dump may be gone only as record retention deletes them: oldest first (older than every dump
  # still listed), and no more than the passes since the acknowledgement said they deleted.
  oldest_dump=$(awk 'NR == 1 { print $1 }' <<<"$now_dumps")
  retention_deleted=$(tail -n "+$log_line" "$tmp/heapwatchd.log" |
    { grep -o 'record retention deleted [0-9]* extended dumps' || true; } | awk '{ n += $4 } END { print n + 0 }')
  gone=0
  while read -r id state; do
    [[ -z $id || $state != *DONE* ]] && continue
    after=$(awk -v id="$id" '$1 == id { print $2 }' <<<"$now_dumps")
    if [[ -z $after ]] && ((gone < retention_deleted)) && [[ -z $oldest_dump || $id < $oldest_dump ]]; then
      gone=$((gone + 1))
      dumps_aged=$((dumps_aged + 1))
    elif [[ $after != *DONE* ]]; then
      lost=$((lost + 1))
      log "round $round: dump $id was DONE, is ${after:-gone} after the restart"
    fi
  done <"$tmp/acked_dumps"
  active=$(grep -cE 'QUEUED|DUMPING|ANALYZING' <<<"$now_dumps" || true)
  if ((active > 0)); then
    stuck=$((stuck + active))
    log "round $round: after the restart: $(grep -E 'QUEUED|DUMPING|ANALYZING' <<<"$now_dumps" | tr '\n' ' ')"
  fi
  # No dump record without its reports and summary, no report or summary without its dump record.
  counts=$(record_counts)
  if [[ ${counts% / *} != "${counts#* / }" ]]; then
    inconsistent=$((inconsistent + 1))
    log "round $round: store records (dump records, reports, summaries) / from the dump list: $counts"
  fi
  log "round $round: killed with the newest dump ${what}; $(wc -l <"$tmp/acked_history") snapshots" \
      "and $(wc -l <"$tmp/acked_dumps") dumps acknowledged before the kill; after restart" \
      "$(count_lines "$now_history") snapshots, missing $missing; $(count_lines "$now_dumps") dumps; records $counts;" \
      "store $used / $max bytes"
done

# A last clean run: let it settle for a second (a retention pass), stop it gracefully, and look at what is on disk.
sleep 1
kill -TERM "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
# The store's files: LMDB's data.mdb and lock.mdb, and heapwatch.lock (one daemon per store).
files=(-type f ! -name data.mdb ! -name lock.mdb ! -name heapwatch.lock)
leftovers=$(find "$tmp/data" "${files[@]}" | wc -l)
if ((leftovers > 0)); then find "$tmp/data" "${files[@]}" >&2; fi
done_dumps=${#done_seen[@]}
deleted_snapshots=$({ grep -o 'retention by size deleted [0-9]* snapshots' "$tmp/heapwatchd.log" || true; } |
  awk '{ n += $5 } END { print n + 0 }')
deleted_dumps=$({ grep -o 'record retention deleted [0-9]* extended dumps' "$tmp/heapwatchd.log" || true; } |
  awk '{ n += $4 } END { print n + 0 }')
deleting_passes=$(grep -c 'retention by size: ' "$tmp/heapwatchd.log" || true)
summary=""
for k in "${!interrupted[@]}"; do summary+="$k=${interrupted[$k]} "; done
log "kills: $kills (newest dump at the kill, or retention_deletion when the kill landed inside a pass that" \
    "deletes snapshots: $summary); kills timed on a retention pass: $retention_rounds, of all kills inside a" \
    "deleting pass: $in_deletion; snapshots missing: $holes; DONE dumps lost: $lost; DONE dumps deleted by" \
    "retention (oldest first): $dumps_aged; dumps left active after a restart: $stuck; record counts" \
    "inconsistent: $inconsistent; over budget after a pass: $over_budget of $budget_checks; files left over: $leftovers;" \
    "finished dumps checked: $done_dumps; retention passes that deleted snapshots: $deleting_passes;" \
    "snapshots deleted by retention: $deleted_snapshots (passes that logged their end), acknowledged ones seen gone: $aged_out; extended dumps deleted by retention: $deleted_dumps"
((holes == 0)) || fail "$holes acknowledged snapshots were lost"
((lost == 0)) || fail "$lost finished dumps were lost"
((stuck == 0)) || fail "$stuck dumps stayed active across a restart"
((inconsistent == 0)) || fail "$inconsistent restarts found dump records, reports and summaries out of step"
((over_budget == 0)) || fail "$over_budget times the store stayed over its budget after a retention pass"
((leftovers == 0)) || fail "$leftovers raw dump or temporary files were left in the store's directory"
((done_dumps > 0)) || fail "no finished dump was ever checked across a kill"
# (A pass killed before its end line deleted without saying how many: count the passes that began.)
((deleting_passes > 0)) || fail "no retention pass deleted snapshots: the kills did not meet a deleting pass"
ok=1
echo "PASS: crash torture ($kills kills)"
