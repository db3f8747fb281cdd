#!/usr/bin/env bash
# End to end: the cost of watching (docs/collection-cost.md) with real JVMs, the real heapwatchd and heapwatchctl.
#
# Usage: cost_e2e.sh HEAPWATCHD HEAPWATCHCTL JAVA_SRC_DIR
#   JAVA_SRC_DIR holds LeakyApp.java, SteadyApp.java and TestSupport.java (tests/e2e/java).
#
# Two daemons, each watching only its own JVMs (jars in this run's directory), run side by side:
#  A. heapwatchd with a pause budget of 1% (so that 100 s show a dozen histograms per JVM; the default 0.1%
#     allows about one a minute to these JVMs on a loaded 2-core machine) at a 2 s interval watches LeakyApp (leaking 1 MB/s),
#     SteadyApp "quiet" (a constant 64 MiB live set, no garbage: no safepoints of its own, started with
#     -Xlog:safepoint) and SteadyApp "busy" (64 MiB live, 1 MB/s of garbage, System.gc() every 2 s: a reclaim
#     counts as "just now" for 2 GC samples, so whenever the budget has credit for an -all, one is fresh;
#     every 10 s failed under load (here, with tests beside it as in CI): the credit reached live first). After
#     HEAPWATCH_E2E_OBSERVE seconds (default 100):
#       - LeakyApp's live-set series (heapwatchctl liveset --json) rises by at least half of what it leaked
#         between its first and last exact points, and the busy SteadyApp's stays flat (spread of its exact
#         points under 8 MiB, around 64 MiB); at least one of its histograms was taken right after its own
#         full collection (mode all_after_gc);
#       - heapwatch_collection_pause_seconds_total of SteadyApp agrees within 10% with the JVM's own safepoint
#         log (the "Total" of its GC_HeapInspection safepoints: the histograms);
#       - LeakyApp (System.gc() every 3 s: exact points) is flagged by the live-set trend at about its
#         leak rate (agents --json live_set_growth_bytes_per_second), the busy SteadyApp is not;
#       - every histogram's mode and pause are in heapwatchctl history, and heapwatch_heap_live_bytes,
#         _capacity_bytes and _max_bytes are exported.
#  B. heapwatchd with a low budget (0.2%: 2 ms a second) at a 1 s interval watches a second SteadyApp
#     (256 MiB live): the interval stretches (agents --json planned_interval_seconds >= 5 s, budget_note says
#     why, heapwatch_collection_interval_seconds agrees), and at every poll the total pause heapwatch caused is
#     at most budget x watched time + the largest single histogram pause.
#  C. heapwatchd with a budget no histogram can keep (0.0001%) and max_interval 10s watches a small SteadyApp:
#     it is still collected (at least 3 histograms), agents --json says over_budget with the reason, and
#     heapwatch_pause_budget_exceeded is 1.
# Every process started here is killed on every exit path (trap). Prints what it measured.
set -euo pipefail

heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL JAVA_SRC_DIR}
heapwatchctl=${2:?}
java_src=${3:?}
observe_s=${HEAPWATCH_E2E_OBSERVE:-100}
low_budget=0.002

# shellcheck source=e2e_lib.sh
E2E_LOG_LINES=20 source "$(dirname "$0")/e2e_lib.sh" heapwatch-cost-e2e

# ---- JVMs and daemons --------------------------------------------------------------------------------
mkdir -p "$tmp/classes" "$tmp/a" "$tmp/b" "$tmp/c"
javac -d "$tmp/classes" "$java_src/LeakyApp.java" "$java_src/SteadyApp.java" "$java_src/TestSupport.java"
# Jars in this run's directories: each daemon's watch filter matches only its own JVMs.
jar --create --file "$tmp/a/LeakyApp.jar" --main-class LeakyApp -C "$tmp/classes" .
jar --create --file "$tmp/a/SteadyApp.jar" --main-class SteadyApp -C "$tmp/classes" .
jar --create --file "$tmp/a/BusySteadyApp.jar" --main-class SteadyApp -C "$tmp/classes" .
jar --create --file "$tmp/b/SteadyApp.jar" --main-class SteadyApp -C "$tmp/classes" .
jar --create --file "$tmp/c/SteadyApp.jar" --main-class SteadyApp -C "$tmp/classes" .

# start_daemon NAME CONFIG_BODY INTERVAL: prints "grpc_port metrics_port".
start_daemon() {
  local name=$1 body=$2 interval=$3
  mkdir -p "$tmp/$name/data"
  printf '%s\n' "$body" >"$tmp/$name/heapwatchd.yml"
  "$heapwatchd" --config "$tmp/$name/heapwatchd.yml" --data-dir "$tmp/$name/data" \
    --grpc-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --grpc-port-file "$tmp/$name/grpc.port" --metrics-port-file "$tmp/$name/metrics.port" \
    --interval "$interval" >"$tmp/heapwatchd-$name.log" 2>&1 &
  pids+=($!)
}
start_daemon a "watch:
  agents:
    include: [\"$tmp/a/*.jar\"]
collection:
  discovery_interval: 1s
  gc_sample_interval: 1s
  pause_budget: 0.01
escalation:
  enabled: false" 2s
start_daemon b "watch:
  agents:
    include: [\"$tmp/b/*.jar\"]
collection:
  discovery_interval: 1s
  pause_budget: $low_budget
escalation:
  enabled: false" 1s
start_daemon c "watch:
  agents:
    include: [\"$tmp/c/*.jar\"]
collection:
  discovery_interval: 1s
  pause_budget: 0.000001
  max_interval: 10s
escalation:
  enabled: false" 1s
grpc_c=$(wait_port_file "$tmp/c/grpc.port" 30) || fail "daemon C wrote no gRPC port"
metrics_c=$(wait_port_file "$tmp/c/metrics.port" 30) || fail "daemon C wrote no metrics port"
grpc_a=$(wait_port_file "$tmp/a/grpc.port" 30) || fail "daemon A wrote no gRPC port"
metrics_a=$(wait_port_file "$tmp/a/metrics.port" 30) || fail "daemon A wrote no metrics port"
grpc_b=$(wait_port_file "$tmp/b/grpc.port" 30) || fail "daemon B wrote no gRPC port"
metrics_b=$(wait_port_file "$tmp/b/metrics.port" 30) || fail "daemon B wrote no metrics port"
log "daemons up: A gRPC $grpc_a metrics $metrics_a; B gRPC $grpc_b metrics $metrics_b"

max_s=$((observe_s + 300))
java -Xmx512m -Xlog:safepoint:file="$tmp/leaky-safepoint.txt" -jar "$tmp/a/LeakyApp.jar" \
  --bytes-per-second 1000000 --system-gc-seconds 3 --max-seconds $max_s >"$tmp/leaky.log" 2>&1 &
pids+=($!)
java -Xmx512m -Xlog:safepoint:file="$tmp/steady-safepoint.txt" -jar "$tmp/a/SteadyApp.jar" \
  --live-mb 64 --garbage-kb-per-second 0 --max-seconds $max_s >"$tmp/steady.log" 2>&1 &
steady_pid=$!
pids+=("$steady_pid")
java -Xmx512m -jar "$tmp/a/BusySteadyApp.jar" --live-mb 64 --garbage-kb-per-second 1024 \
  --system-gc-seconds 2 --max-seconds $max_s >"$tmp/busy.log" 2>&1 &
pids+=($!)
java -Xmx1g -jar "$tmp/b/SteadyApp.jar" --live-mb 256 --max-seconds $max_s >"$tmp/steady-b.log" 2>&1 &
pids+=($!)
java -Xmx128m -jar "$tmp/c/SteadyApp.jar" --live-mb 16 --max-seconds $max_s >"$tmp/steady-c.log" 2>&1 &
pids+=($!)

ctl_a() { "$heapwatchctl" --server "127.0.0.1:$grpc_a" "$@"; }
ctl_b() { "$heapwatchctl" --server "127.0.0.1:$grpc_b" "$@"; }
ctl_c() { "$heapwatchctl" --server "127.0.0.1:$grpc_c" "$@"; }
agent_of() {  # agent_of CTL MAIN_CLASS_SUFFIX
  "$1" --json agents | jq -r --arg s "$2" '.agents[] | select(.state == "up" and (.main_class | endswith($s))) | .agent' | head -1
}
leaky="" steady="" busy="" steady_b="" steady_c=""
for _ in $(seq 60); do
  [[ -z $leaky ]] && leaky=$(agent_of ctl_a /a/LeakyApp.jar)
  [[ -z $steady ]] && steady=$(agent_of ctl_a /a/SteadyApp.jar)
  [[ -z $busy ]] && busy=$(agent_of ctl_a /a/BusySteadyApp.jar)
  [[ -z $steady_b ]] && steady_b=$(agent_of ctl_b /b/SteadyApp.jar)
  [[ -z $steady_c ]] && steady_c=$(agent_of ctl_c /c/SteadyApp.jar)
  [[ -n $leaky && -n $steady && -n $busy && -n $steady_b && -n $steady_c ]] && break
  sleep 1
done
[[ -n $leaky && -n $steady && -n $busy && -n $steady_b && -n $steady_c ]] ||
  fail "the JVMs were not all watched within 60 s"
log "watching LeakyApp $leaky, SteadyApp $steady, busy SteadyApp $busy (A), SteadyApp $steady_b (B)"

# ---- B: the budget is kept, at every poll ----------------------------------------------------------------
max_budget_ratio=0
end=$(($(date +%s) + observe_s))
while (($(date +%s) < end)); do
  json=$(ctl_b --json agents)
  row=$(jq -c --arg a "$steady_b" '.agents[] | select(.agent == $a)' <<<"$json")
  [[ -n $row ]] || fail "agent $steady_b vanished from daemon B"
  # The largest single pause so far, from the stored snapshots' costs.
  # (NOT_FOUND until the first histogram: the budget of a new JVM starts empty.)
  max_pause=$({ ctl_b --json history "$steady_b" 'long[]' 2>/dev/null || echo '{"points": []}'; } |
    jq '[.points[].pause_seconds // 0] | max // 0')
  read -r total since_frac <<<"$(jq -r '"\(.total_pause_seconds // 0) \(.paused_fraction // 0)"' <<<"$row")"
  # watched seconds = total / fraction (paused_fraction is total / watched time)
  check=$(awk -v t="$total" -v f="$since_frac" -v b="$low_budget" -v m="$max_pause" 'BEGIN {
    if (t == 0 || f == 0) { print "ok 0"; exit }
    watched = t / f; allowed = b * watched + m;
    printf "%s %.3f\n", (t <= allowed + 1e-6 ? "ok" : "over"), t / allowed }')
  [[ ${check%% *} == ok ]] || fail "daemon B exceeded its budget by more than one collection: total ${total}s, fraction $since_frac, largest pause ${max_pause}s"
  ratio=${check#* }
  max_budget_ratio=$(awk -v a="$max_budget_ratio" -v b="$ratio" 'BEGIN { print (b > a ? b : a) }')
  sleep 2
done
# The planned interval, the note and the gauge change together (one lock) when a histogram is taken or
# postponed, but they are read here with three requests: a histogram between them (B's first comes after
# about 90 s, when its -all prior has accrued and no natural GC came) shows two states. So read until two
# rounds in a row agree, at most 10 times; the comparison is then of one state.
planned="" note="" metric_interval="" agents_table="" previous=""
for _ in $(seq 10); do
  row=$(ctl_b --json agents | jq -c --arg a "$steady_b" '.agents[] | select(.agent == $a)')
  planned=$(jq -r '.planned_interval_seconds // 0' <<<"$row")
  note=$(jq -r '.budget_note // ""' <<<"$row")
  agents_table=$(ctl_b agents)
  metric_interval=$(curl -fsS "http://127.0.0.1:$metrics_b/metrics" |
    awk -v a="$steady_b" '$1 ~ "^heapwatch_collection_interval_seconds" && index($1, a) { print $2 }')
  [[ "$planned|$note|$metric_interval" == "$previous" ]] && break
  previous="$planned|$note|$metric_interval"
  sleep 0.5
done
log "B: planned interval ${planned}s, note: $note; total pause / allowed peaked at $max_budget_ratio"
awk -v p="$planned" 'BEGIN { exit !(p >= 5) }' || fail "B: the interval did not stretch (planned ${planned}s)"
[[ $note == *"pause budget"* || $note == *"waiting"* ]] || fail "B: agents gives no reason for the stretched interval: '$note'"
grep -F "$steady_b" <<<"$agents_table" | grep -q "pause budget\|waiting" || fail "B: the agents table does not say why"
[[ -n $metric_interval ]] || fail "B: heapwatch_collection_interval_seconds missing"
# (The same value printed by protobuf's JSON and by prometheus-cpp: equal to a millisecond.)
awk -v m="$metric_interval" -v p="$planned" 'BEGIN { d = m - p; exit !(m >= 5 && d < 0.001 && d > -0.001) }' ||
  fail "B: heapwatch_collection_interval_seconds $metric_interval != planned $planned"

# ---- C: over budget, still watched -------------------------------------------------------------------
row=$(ctl_c --json agents | jq -c --arg a "$steady_c" '.agents[] | select(.agent == $a)')
n_c=$(ctl_c --json history "$steady_c" 'long[]' | jq '.points | length')
log "C: $n_c histograms; over_budget $(jq -r '.over_budget' <<<"$row"): $(jq -r '.budget_note' <<<"$row")"
((n_c >= 3)) || fail "C: an over-budget agent must still be collected every max_interval (got $n_c histograms)"
jq -e '.over_budget == true and (.budget_note | test("over budget"))' <<<"$row" >/dev/null ||
  fail "C: agents does not report the agent as over budget: $row"
# (Read the whole page first: `curl | grep -q` fails under pipefail when grep stops reading early.)
metrics_c_text=$(curl -fsS "http://127.0.0.1:$metrics_c/metrics")
grep -q "^heapwatch_pause_budget_exceeded{agent=\"$steady_c\"} 1" <<<"$metrics_c_text" ||
  fail "C: heapwatch_pause_budget_exceeded is not 1: $(grep pause_budget_exceeded <<<"$metrics_c_text")"

# ---- A: live-set series, pause counter against the safepoint log -----------------------------------------
# Exact points only (full collections and concurrent reclaims; upper bounds are not the live set).
exact_points() {
  ctl_a --json liveset "$1" | jq -r '.points[] | select(.source != "young_upper_bound") |
    "\(.time) \(.live_bytes)"'
}
leaky_points=$(exact_points "$leaky")
busy_points=$(exact_points "$busy")
n_leaky=$(grep -c . <<<"$leaky_points" || true)
n_busy=$(grep -c . <<<"$busy_points" || true)
log "A: $n_leaky exact live-set points of LeakyApp, $n_busy of the busy SteadyApp"
((n_leaky >= 2)) || fail "A: LeakyApp has $n_leaky exact live-set points (want >= 2): $leaky_points"
((n_busy >= 5)) || fail "A: the busy SteadyApp has $n_busy exact live-set points (want >= 5)"
# LeakyApp: growth between first and last point >= half of what it leaked (1 MB/s) in that time.
read -r rise span <<<"$(awk '
  { cmd = "date -d " $1 " +%s.%N"; cmd | getline t; close(cmd); if (NR == 1) { t0 = t; b0 = $2 } t1 = t; b1 = $2 }
  END { printf "%d %.1f\n", b1 - b0, t1 - t0 }' <<<"$leaky_points")"
log "A: LeakyApp's live set rose by $rise bytes over ${span}s (leak: 1000000 B/s)"
awk -v r="$rise" -v s="$span" 'BEGIN { exit !(s >= 20 && r >= 0.5 * 1000000 * s) }' ||
  fail "A: LeakyApp's live set did not rise with its leak: +$rise bytes over ${span}s"
# The busy SteadyApp: flat around its 64 MiB.
read -r lo hi <<<"$(awk 'NR == 1 { lo = $2; hi = $2 } { if ($2 < lo) lo = $2; if ($2 > hi) hi = $2 } END { print lo, hi }' <<<"$busy_points")"
log "A: the busy SteadyApp's live set between $lo and $hi bytes"
awk -v lo="$lo" -v hi="$hi" 'BEGIN { mib = 1048576; exit !(hi - lo < 8 * mib && lo > 60 * mib && hi < 90 * mib) }' ||
  fail "A: the busy SteadyApp's live set is not flat: $lo..$hi"
# The live-set series through the trend detector: LeakyApp's (an exact point every ~3 s) is flagged as
# growing, the busy SteadyApp's is not.
agents_json=$(ctl_a --json agents)
leaky_growth=$(jq -r --arg a "$leaky" '.agents[] | select(.agent == $a) | .live_set_growth_bytes_per_second' <<<"$agents_json")
busy_growth=$(jq -r --arg a "$busy" '.agents[] | select(.agent == $a) | .live_set_growth_bytes_per_second' <<<"$agents_json")
log "A: live-set trend: LeakyApp grows ${leaky_growth} B/s, the busy SteadyApp ${busy_growth} B/s"
awk -v g="$leaky_growth" 'BEGIN { exit !(g >= 0.5 * 1000000 && g <= 2 * 1000000) }' ||
  fail "A: LeakyApp's live set is not flagged as growing at about 1 MB/s: $leaky_growth"
[[ $busy_growth == 0 ]] || fail "A: the busy SteadyApp's flat live set is flagged as growing: $busy_growth"
busy_modes=$(ctl_a --json history "$busy" 'long[]' | jq -r '[.points[].mode] | group_by(.) | map("\(.[0]) x\(length)") | join(", ")')
log "A: the busy SteadyApp's histograms: $busy_modes"
[[ $busy_modes == *all_after_gc* ]] || fail "A: no histogram of the busy SteadyApp was taken right after its own GC"

metrics=$(curl -fsS "http://127.0.0.1:$metrics_a/metrics")
for family in heapwatch_heap_live_bytes heapwatch_heap_live_growth_bytes_per_second heapwatch_heap_capacity_bytes heapwatch_heap_max_bytes; do
  grep -q "^$family{.*$steady" <<<"$metrics" || fail "A: $family missing for SteadyApp"
done
counter=$(awk -v a="$steady" '$1 ~ "^heapwatch_collection_pause_seconds_total" && index($1, a) { print $2 }' <<<"$metrics")
[[ -n $counter ]] || fail "A: heapwatch_collection_pause_seconds_total missing for SteadyApp"
# Stop SteadyApp's collections before reading its log: kill the daemon first (the log is complete then).
kill "$steady_pid"
sleep 1
# -Xlog:safepoint (JDK 17): Safepoint "GC_HeapInspection", Time since last: N ns, Reaching safepoint: N ns,
# Cleanup: N ns, At safepoint: N ns, Total: N ns
logged=$(grep -F '"GC_HeapInspection"' "$tmp/steady-safepoint.txt" |
  sed -E 's/.*Total: ([0-9]+) ns.*/\1/' | awk '{ s += $1 } END { printf "%.6f\n", s / 1e9 }')
n_logged=$(grep -cF '"GC_HeapInspection"' "$tmp/steady-safepoint.txt" || true)
histories=$(ctl_a --json history "$steady" 'long[]')
n_stored=$(jq '[.points[] | select(.mode != "unknown")] | length' <<<"$histories")
modes=$(jq -r '[.points[].mode] | group_by(.) | map("\(.[0]) x\(length)") | join(", ")' <<<"$histories")
log "A: SteadyApp: counter ${counter}s over $n_stored histograms ($modes); its safepoint log: ${logged}s over $n_logged heap inspections"
((n_stored >= 3)) || fail "A: only $n_stored histograms of SteadyApp"
jq -e '[.points[] | select(.mode == "unknown")] | length == 0' <<<"$histories" >/dev/null ||
  fail "A: a stored histogram has no mode"
awk -v c="$counter" -v l="$logged" 'BEGIN { exit !(l > 0 && c >= 0.9 * l && c <= 1.1 * l) }' ||
  fail "A: pause counter ${counter}s is not within 10% of the safepoint log's ${logged}s"
history_table=$(ctl_a history "$steady" 'long[]')
grep -qE ' (live|all|all_after_gc) +[0-9.]+s' <<<"$history_table" ||
  fail "A: heapwatchctl history shows no mode and pause"

ok=1
echo "PASS: cost of watching (live set rises +$rise B over ${span}s and stays flat; pause counter ${counter}s vs safepoint log ${logged}s; low budget stretched the interval to ${planned}s; over-budget agent collected $n_c times)"
