#!/usr/bin/env bash
# Fault injection (issue 12, docs/fault-injection.md): one heapwatchd watching two real JVMs, the
# "victim" and the "other", with its store and its dump directory on two small tmpfs mounts, meets
# in each round:
#   hang      the victim is stopped (SIGSTOP) at a random moment of its 1 s collections (often
#             mid-attach): its collections time out (collection_timeout), the other JVM keeps its
#             rate, and after SIGCONT the victim is collected again;
#   dump_hang the victim is stopped while it writes an extended dump (GC.heap_dump): the dump fails
#             after escalation.dump_timeout (dump_timeout), the other JVM keeps its rate, and after
#             SIGCONT the next dump of the victim is DONE;
#   store_full the store's tmpfs is filled: snapshot commits fail (store_disk_full) and a dump's
#             reports cannot be stored (report_write_failed); the daemon answers queries all along,
#             and once the filler is deleted it stores snapshots again by itself;
#   dump_full the dump directory's tmpfs is filled while a dump is being started: the JVM cannot
#             write it (dump_disk_full); once space returns the next dump is DONE;
#   startup   with the daemon stopped: a truncated data file, a corrupt data file, a read-only store
#             directory, and (with the daemon running) a second heapwatchd on the same store: each
#             start fails with a clear error and a non-zero exit, and the data file's bytes are
#             unchanged (sha256).
# After every fault: every snapshot and every DONE dump acknowledged over gRPC before it is still
# there (the store on the real tmpfs, read back over gRPC), the daemon still runs. At the end: the
# totals (faults injected, snapshots and dumps lost) and the heapwatch_faults_total counters.
#
# Usage: fault_injection.sh HEAPWATCHD HEAPWATCHCTL JAVA_SRC_DIR [ROUNDS]
#   ROUNDS (default $HEAPWATCH_FAULT_ROUNDS or 1): the README's test command runs 1 round; the long
#   form's figures are in docs/fault-injection.md. Waits for the daemon are multiplied by
#   HEAPWATCH_TIME_SCALE where the instrumented (ASan) daemon is slower (tests/e2e/e2e_lib.sh hw_scaled). Needs root (tmpfs mounts, in a private mount
#   namespace): exits 77 (ctest SKIP) otherwise.
set -euo pipefail
heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL JAVA_SRC_DIR [ROUNDS]}
heapwatchctl=${2:?}
java_src=${3:?}
rounds=${4:-${HEAPWATCH_FAULT_ROUNDS:-1}}
# How long the store_full fault waits for a failed snapshot commit (0: it does not wait).
store_full_wait=${HEAPWATCH_FAULT_STORE_FULL_WAIT:-$((rounds > 1 ? 90 : 0))}
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: fault injection needs root (tmpfs mounts)"
  exit 77
fi
# A private mount namespace: the tmpfs mounts vanish with the test, whatever happens.
if [[ -z ${HEAPWATCH_FAULTS_NS:-} ]]; then
  exec unshare --mount --propagation private env HEAPWATCH_FAULTS_NS=1 bash "$0" "$@"
fi

# shellcheck source=e2e_lib.sh
E2E_LOG_LINES=40 source "$(dirname "$0")/e2e_lib.sh" heapwatch-faults
store=$tmp/store
dumps=$tmp/dumps
mkdir -p "$tmp/classes" "$tmp/jar" "$store" "$dumps"
faults_exit() {
  local rc=$?
  set +e
  umount -l "$store" "$dumps" 2>/dev/null || true
  (exit "$rc")
  cleanup
}
trap faults_exit EXIT
mount -t tmpfs -o size=12m,mode=0700 tmpfs "$store"
mount -t tmpfs -o size=480m,mode=0755 tmpfs "$dumps"
data=$store/data

javac -d "$tmp/classes" "$java_src/LeakyApp.java" "$java_src/TestSupport.java"
for app in Victim Other; do
  jar --create --file "$tmp/jar/$app.jar" --main-class LeakyApp -C "$tmp/classes" .
done
# The victim leaks 200 KB/s (its dumps take a few hundred ms to write), the other 100 KB/s.
java -Xmx256m -jar "$tmp/jar/Victim.jar" --bytes-per-second 200000 >"$tmp/victim.log" 2>&1 &
victim_pid=$!
pids+=("$victim_pid")
java -Xmx64m -jar "$tmp/jar/Other.jar" --bytes-per-second 100000 >"$tmp/other.log" 2>&1 &
other_pid=$!
pids+=("$other_pid")

cat >"$tmp/heapwatchd.yml" <<EOF
watch:
  agents:
    include: ["$tmp/jar/*.jar"]
collection:
  interval: 1s
  discovery_interval: 500ms
  pause_budget: 1
  handshake_timeout: 2s
  connect_timeout: 2s
  io_timeout: 2s
  backoff_initial: 1s
  backoff_max: 2s
retention:
  max_bytes: 1GiB
  check_interval: 5s
escalation:
  auto: false
  min_dump_interval: 0s
  dump_dir: $dumps
  dump_timeout: 8s
  gzip: false
  keep_raw_dumps: false
EOF

daemon_pid=0
start_daemon() {  # e2e_lib.sh
  hw_start_daemon "$heapwatchd" "$heapwatchctl" "$tmp/heapwatchd.yml" "$data"
  daemon_pid=$hw_daemon_pid
  metrics_port=$hw_metrics_port
  ctl=("${hw_ctl[@]}")
}
declare -A faults_seen=()  # heapwatch_faults_total summed over every daemon run
add_fault_counters() {
  local name value
  while read -r name value; do
    name=${name#*reason=\"}
    name=${name%\"\}}
    faults_seen[$name]=$((${faults_seen[$name]:-0} + ${value%.*}))
  done < <(curl -sf "http://127.0.0.1:$metrics_port/metrics" | grep '^heapwatch_faults_total{' || true)
}
stop_daemon() {
  add_fault_counters
  kill -TERM "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
}
# heapwatch_faults_total{reason=$1}.
fault_count() { hw_metric "heapwatch_faults_total{reason=\"$1\"}"; }
agent_of() {  # agent id of the JVM running jar $1
  "${ctl[@]}" --json agents | jq -r --arg j "$1" '.agents[]? | select((.mainClass // .main_class) | contains($j)) | .agent' | head -n1
}
agent_field() {  # field $2 of agent $1
  "${ctl[@]}" --json agents | jq -r --arg a "$1" --arg f "$2" '.agents[]? | select(.agent == $a) |
    (.[$f] // .[$f | gsub("(?<c>[A-Z])"; "_\(.c | ascii_downcase)")]) // empty'
}
tracked_class='LeakyApp$Leak'
history_times() { hw_history_times "$1" "$tracked_class"; }
dump_states() { hw_dump_states "$1"; }  # "id state" lines of agent $1's dumps
dump_error() {  # error text of dump $2 of agent $1
  "${ctl[@]}" --json reports "$1" | jq -r --arg d "$2" '(.dumps // .extendedDumps // .extended_dumps)[]? |
    select((.dumpId // .dump_id) == $d) | .error // empty'
}
wait_until() { hw_wait_until "$@"; }  # up to $1 seconds for command "$2..." to succeed
count_lines() { if [[ -z $1 ]]; then echo 0; else wc -l <<<"$1"; fi; }

# Acknowledged state: every snapshot time of both agents and every DONE dump seen over gRPC.
declare -A acked_snap=() acked_done=()
acknowledge() {
  local a t line
  for a in "$victim" "$other"; do
    while read -r t; do
      if [[ -n $t ]]; then acked_snap["$a $t"]=1; fi
    done < <(history_times "$a")
  done
  while read -r line; do
    if [[ $line == *DONE* ]]; then acked_done["${line%% *}"]=1; fi
  done < <(dump_states "$victim")
}
# Counts acknowledged snapshots and DONE dumps that are missing now (retention never deletes here:
# max_bytes is 1 GiB and max_age 14 days).
lost_snapshots=0 lost_dumps=0
check_nothing_lost() {
  local what=$1 a missing=0 k now_v now_o states
  now_v=$(history_times "$victim")
  now_o=$(history_times "$other")
  for k in "${!acked_snap[@]}"; do
    a=${k%% *}
    if [[ $a == "$victim" ]]; then grep -qxF "${k#* }" <<<"$now_v" || missing=$((missing + 1))
    else grep -qxF "${k#* }" <<<"$now_o" || missing=$((missing + 1)); fi
  done
  states=$(dump_states "$victim")
  local dmissing=0
  for k in "${!acked_done[@]}"; do grep -qxF "$k EXTENDED_DUMP_STATE_DONE" <<<"$states" ||
    grep -qE "^$k .*DONE" <<<"$states" || dmissing=$((dmissing + 1)); done
  lost_snapshots=$((lost_snapshots + missing))
  lost_dumps=$((lost_dumps + dmissing))
  ((missing == 0 && dmissing == 0)) ||
    log "after $what: $missing acknowledged snapshots and $dmissing DONE dumps missing"
  kill -0 "$daemon_pid" 2>/dev/null || fail "heapwatchd died after $what"
}
# Snapshots of the other JVM over $1 seconds; fails when fewer than 60% of one a second.
other_keeps_its_rate() {
  local window=$1 before after
  before=$(count_lines "$(history_times "$other")")
  sleep "$window"
  after=$(count_lines "$(history_times "$other")")
  log "  the other JVM: $((after - before)) snapshots in ${window}s"
  ((after - before >= window * 6 / 10)) || fail "the other JVM was not collected on schedule during $2"
}
request_dump() {  # requests a dump of the victim; prints its id
  "${ctl[@]}" --json dump "$victim" | jq -r '.dump | (.dumpId // .dump_id) // empty'
}
dump_state_of() { dump_states "$victim" | awk -v d="$1" '$1 == d { print $2 }'; }
dump_state_has() { [[ $(dump_state_of "$1") == *"$2"* ]]; }
store_write_failed() {  # a store write failed since the counts $1 (snapshots) and $2 (reports)
  [[ $(fault_count store_disk_full) -gt $1 || $(fault_count report_write_failed) -gt $2 ]]
}
fault_above() { [[ $(fault_count "$1") -gt $2 ]]; }
dump_ended() { [[ $(dump_state_of "$1") == *DONE* || $(dump_state_of "$1") == *FAILED* ]]; }
agent_state_is() {  # heapwatchctl prints "up" / "unreachable"
  local state
  state=$(agent_field "$1" state)
  [[ ${state,,} == *"${2,,}" ]]
}
new_snapshot_of() { [[ $(history_times "$1" | tail -n1) > $2 ]]; }
fill() {  # fills tmpfs $1 with a filler file
  dd if=/dev/zero of="$1/filler" bs=1M status=none 2>/dev/null || true
}

declare -A injected=()
injected_total=0
count_injected() {
  injected[$1]=$((${injected[$1]:-0} + 1))
  injected_total=$((injected_total + 1))
}

start_daemon
victim="" other=""
for _ in $(seq 120); do
  victim=$(agent_of Victim.jar)
  other=$(agent_of Other.jar)
  [[ -n $victim && -n $other && -n $(history_times "$victim") && -n $(history_times "$other") ]] && break
  sleep 0.5
done
[[ -n $victim && -n $other ]] || fail "the JVMs were not discovered"
"${ctl[@]}" dump --wait --timeout 120s "$victim" >/dev/null || fail "the first dump did not finish"
acknowledge
log "victim $victim, other $other; $rounds rounds; ${#acked_done[@]} DONE dump to begin with"

for round in $(seq "$rounds"); do
  # ---- hang: SIGSTOP at a random moment of the collections, SIGCONT after the timeouts.
  before=$(fault_count collection_timeout)
  sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", r / 32767 }')"
  kill -STOP "$victim_pid"
  wait_until 20 fault_above collection_timeout $before ||
    fail "no collection_timeout fault while the victim was stopped"
  wait_until 20 agent_state_is "$victim" UNREACHABLE || fail "the stopped victim was not UNREACHABLE"
  log "round $round hang: victim UNREACHABLE ($(agent_field "$victim" lastError))"
  other_keeps_its_rate 5 "the hang"
  last=$(history_times "$victim" | tail -n1)
  kill -CONT "$victim_pid"
  wait_until 20 agent_state_is "$victim" UP || fail "the victim did not recover after SIGCONT"
  wait_until 10 new_snapshot_of "$victim" "$last" || fail "no new snapshot of the victim after SIGCONT"
  count_injected hang
  acknowledge
  check_nothing_lost "hang"

  # ---- dump_hang: SIGSTOP while the JVM writes the dump.
  # Observed, not timed: the victim's dump takes about 0.2 s to write, and under ASan the request
  # itself (an instrumented heapwatchctl) can take longer than that, so the request runs in the
  # background while a loop that forks nothing (read -t on a pipe we hold both ends of) watches for
  # the dump file and stops the victim when it appears. The victim is then mid-dump for sure if it
  # still holds the file open (HotSpot closes it when the dump is written); if not, it finished in
  # between, nothing was injected: it is let go and the next attempt made.
  before=$(fault_count dump_timeout)
  stopped=0
  exec {tick}<> <(:)
  for attempt in $(seq 10); do
    request_dump >"$tmp/dump_id" &
    request_pid=$!
    for _ in $(seq 3000); do
      if compgen -G "$dumps/*/*.hprof" >/dev/null; then kill -STOP "$victim_pid"; stopped=1; break; fi
      read -r -t 0.005 -u "$tick" _ || true
    done
    wait "$request_pid" || true
    id=$(<"$tmp/dump_id")
    [[ -n $id ]] || fail "no dump id from the dump request"
    if ((stopped)); then
      if ls -l "/proc/$victim_pid/fd" 2>/dev/null | grep -q '\.hprof'; then break; fi
      kill -CONT "$victim_pid"
      stopped=0
    fi
    wait_until "$(hw_scaled 60)" dump_ended "$id" || true
    log "round $round dump_hang: attempt $attempt: the dump was written before it could be stopped; again"
  done
  exec {tick}<&-
  ((stopped)) || fail "could not stop the victim while it wrote a dump"
  log "round $round dump_hang: victim stopped mid-dump (attempt $attempt, dump file open)"
  wait_until "$(hw_scaled 30)" dump_state_has "$id" FAILED ||
    fail "the dump of the stopped victim did not fail"
  log "round $round dump_hang: dump $id FAILED: $(dump_error "$victim" "$id")"
  [[ $(fault_count dump_timeout) -gt $before ]] || fail "no dump_timeout fault"
  other_keeps_its_rate 3 "the dump hang"
  kill -CONT "$victim_pid"
  wait_until 20 agent_state_is "$victim" UP || fail "the victim did not recover after SIGCONT"
  "${ctl[@]}" dump --wait --timeout 120s "$victim" >/dev/null || fail "no dump after the dump hang"
  count_injected dump_hang
  acknowledge
  check_nothing_lost "dump_hang"

  # ---- store_full: no space for the store; a dump's reports cannot be stored either.
  before_store=$(fault_count store_disk_full)
  before_report=$(fault_count report_write_failed)
  fill "$store"
  # LMDB first reuses the pages its copy-on-write commits free, so small snapshot commits may go on
  # for a while; a dump's reports (and key frames) need new pages at once.
  id=$(request_dump)
  [[ -n $id ]] || fail "no dump could be requested while the store was full"
  full_at=$SECONDS
  wait_until 30 fault_above report_write_failed "$before_report" ||
    fail "no report_write_failed fault while the store's disk was full"
  # A snapshot commit needs new pages once LMDB's free ones are used up: 20-40 s here (these JVMs'
  # snapshots are small deltas). The long form waits for it; the short form goes on (the store's
  # own test, DurabilityTest.RealDiskFullIsResourceExhaustedAndHeals, fails commits at once).
  if ((store_full_wait > 0)); then
    wait_until "$store_full_wait" fault_above store_disk_full "$before_store" ||
      fail "no store_disk_full fault within ${store_full_wait}s of a full store disk"
    log "round $round store_full: the first snapshot commit failed $((SECONDS - full_at)) s after the disk filled"
  fi
  check_nothing_lost "store_full (while full)"
  if [[ $(fault_count store_disk_full) -gt $before_store ]]; then
    grep -q "store: cannot store a snapshot" "$tmp/heapwatchd.log" || fail "no log line for the full store"
  fi
  if [[ $(fault_count report_write_failed) -gt $before_report ]]; then
    grep -q "analysis failed: RESOURCE_EXHAUSTED" "$tmp/heapwatchd.log" || fail "no log line for the report write"
  fi
  log "round $round store_full: $(($(fault_count store_disk_full) - before_store)) snapshot commits" \
      "and $(($(fault_count report_write_failed) - before_report)) report writes failed"
  rm -f "$store/filler"
  last_v=$(history_times "$victim" | tail -n1)
  last_o=$(history_times "$other" | tail -n1)
  wait_until 20 new_snapshot_of "$victim" "$last_v" || fail "no snapshot of the victim after space returned"
  wait_until 20 new_snapshot_of "$other" "$last_o" || fail "no snapshot of the other after space returned"
  wait_until 20 dump_ended "$id" || fail "dump $id did not end after space returned"
  "${ctl[@]}" dump --wait --timeout 120s "$victim" >/dev/null || fail "no dump after the store was full"
  count_injected store_full
  acknowledge
  check_nothing_lost "store_full"

  # ---- dump_full: the dump directory fills between the daemon's free-space check and the write.
  before=$(fault_count dump_disk_full)
  kill -STOP "$victim_pid"
  id=$(request_dump)
  wait_until 5 dump_state_has "$id" DUMPING || true
  fill "$dumps"
  kill -CONT "$victim_pid"
  wait_until 30 dump_ended "$id" || fail "dump $id did not end on a full dump directory"
  log "round $round dump_full: dump $id $(dump_state_of "$id"): $(dump_error "$victim" "$id")"
  [[ $(dump_state_of "$id") == *FAILED* ]] || fail "dump $id did not fail on a full dump directory"
  [[ $(fault_count dump_disk_full) -gt $before ]] || fail "no dump_disk_full fault"
  rm -f "$dumps/filler"
  wait_until 20 agent_state_is "$victim" UP || fail "the victim is not UP after dump_full"
  "${ctl[@]}" dump --wait --timeout 120s "$victim" >/dev/null || fail "no dump after the dump directory was full"
  count_injected dump_full
  acknowledge
  check_nothing_lost "dump_full"

  # ---- startup: a second daemon on the store; then, stopped: truncated, corrupt, read-only.
  set +e
  timeout 30 "$heapwatchd" --config "$tmp/heapwatchd.yml" --data-dir "$data" --grpc-listen 127.0.0.1:0 \
    --metrics-listen 127.0.0.1:0 >"$tmp/second.out" 2>&1
  rc=$?
  set -e
  ((rc != 0 && rc != 124)) || fail "a second heapwatchd on the same store exited $rc"
  grep -q "in use by another" "$tmp/second.out" || fail "no clear error for the held lock: $(cat "$tmp/second.out")"
  count_injected startup_lock
  check_nothing_lost "startup_lock"
  stop_daemon
  sum=$(sha256sum "$data/data.mdb" | awk '{ print $1 }')
  cp "$data/data.mdb" "$tmp/data.mdb.good"
  size=$(stat -c %s "$data/data.mdb")
  try_start() {  # $1: name of the fault; the daemon must refuse with $2 in its output
    set +e
    timeout 30 "$heapwatchd" --config "$tmp/heapwatchd.yml" --data-dir "$data" --grpc-listen 127.0.0.1:0 \
      --metrics-listen 127.0.0.1:0 >"$tmp/$1.out" 2>&1
    local rc=$?
    set -e
    ((rc != 0 && rc != 124)) || fail "heapwatchd started on a $1 store (exit $rc)"
    grep -q "$2" "$tmp/$1.out" || fail "no clear error for the $1 store: $(cat "$tmp/$1.out")"
    log "round $round startup $1: exit $rc: $(grep -o "$2.*" "$tmp/$1.out" | head -n1 | cut -c1-150)"
  }
  truncate -s $((size / 2)) "$data/data.mdb"
  sum_bad=$(sha256sum "$data/data.mdb" | awk '{ print $1 }')
  try_start truncated "corrupt or truncated"
  [[ $(sha256sum "$data/data.mdb" | awk '{ print $1 }') == "$sum_bad" ]] || fail "the truncated file was changed"
  count_injected startup_truncated
  cp "$tmp/data.mdb.good" "$data/data.mdb"
  dd if=/dev/urandom of="$data/data.mdb" bs=4096 count=2 conv=notrunc status=none
  sum_bad=$(sha256sum "$data/data.mdb" | awk '{ print $1 }')
  try_start corrupt "corrupt or truncated"
  [[ $(sha256sum "$data/data.mdb" | awk '{ print $1 }') == "$sum_bad" ]] || fail "the corrupt file was changed"
  count_injected startup_corrupt
  cp "$tmp/data.mdb.good" "$data/data.mdb"
  [[ $(sha256sum "$data/data.mdb" | awk '{ print $1 }') == "$sum" ]] || fail "restoring the data file failed"
  mount -o remount,ro "$store"
  try_start read_only "Read-only file system"
  mount -o remount,rw "$store"
  [[ $(sha256sum "$data/data.mdb" | awk '{ print $1 }') == "$sum" ]] || fail "the data file changed while read-only"
  count_injected startup_read_only
  start_daemon
  check_nothing_lost "startup"
done

stop_daemon
start_daemon
check_nothing_lost "the final restart"
summary=""
for k in hang dump_hang store_full dump_full startup_lock startup_truncated startup_corrupt startup_read_only; do
  summary+="$k=${injected[$k]:-0} "
done
add_fault_counters
counters=""
for k in $(printf '%s\n' "${!faults_seen[@]}" | sort); do counters+="$k=${faults_seen[$k]} "; done
log "faults injected: $injected_total ($summary); acknowledged snapshots checked: ${#acked_snap[@]};" \
    "DONE dumps checked: ${#acked_done[@]}; snapshots lost: $lost_snapshots; DONE dumps lost: $lost_dumps"
log "heapwatch_faults_total over all daemon runs: $counters"
((lost_snapshots == 0)) || fail "$lost_snapshots acknowledged snapshots were lost"
((lost_dumps == 0)) || fail "$lost_dumps DONE dumps were lost"
ok=1
echo "PASS: fault injection ($rounds rounds, $injected_total faults)"
