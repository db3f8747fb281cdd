#!/usr/bin/env bash
# End to end: the kinds of leak users run into, found by heapwatchd as users get it, side by side.
#
# What it proves: heapwatchd at its shipped defaults (1 minute between histograms, a pause budget of 0.1 %,
# the default trend options; only a data dir, ports and a watch filter set), watching five JVMs at once on
# this machine, within HEAPWATCH_E2E_WATCH_SECONDS (10 minutes) of their start
#  - lists a SLOW leak (HeapExhaustionApp at 250 KB/s into -Xmx256m: it would die of an OutOfMemoryError
#    about 17 minutes after its start, measured) and names its class (HeapExhaustionApp$Order) within
#    HEAPWATCH_E2E_SLOW_NAME_SECONDS (8 minutes) of the leak's start;
#  - names the record class of a THREAD-LOCAL leak (ThreadLocalPoolApp: a pool's ThreadLocal lists never
#    removed; its records are the 1 KiB byte[] buffers it appends, ThreadLocalPoolApp has no class of its
#    own in the leak; about 420 KB/s with --tasks-per-tick 40, -Xmx384m: full after about 16 minutes);
#  - lists a CLASS-LOADER leak (ClassLoaderLeakApp: a plugin redeployed every 5 s through a new parentless
#    URLClassLoader, each deployment's thread never stopped: +52 classes and about 110 KB of metaspace per
#    deployment) as a leak of kind "class_loader";
#  - never lists a leak of the two HEALTHY JVMs (HealthyApp in its ordinary mode, ThreadLocalPoolCleanApp).
# The e2e tests that check detection run heapwatchd with pause_budget 1 and 1 s intervals; this one checks
# how long detection takes as shipped, and what it costs each JVM (the pause share heapwatch caused).
#
# Usage: defaults_e2e.sh HEAPWATCHD HEAPWATCHCTL JAVA_SRC_DIR
#   JAVA_SRC_DIR holds HeapExhaustionApp.java, ThreadLocalPoolApp.java, ThreadLocalPoolCleanApp.java,
#   ClassLoaderLeakApp.java, HealthyApp.java and TestSupport.java (tests/e2e/java).
#   HEAPWATCH_E2E_WATCH_SECONDS      how long to poll at most (default 600)
#   HEAPWATCH_E2E_SLOW_NAME_SECONDS  the slow leak's class must be named by then (default 480)
#   HEAPWATCH_E2E_SLOW_RATE          HeapExhaustionApp's --bytes-per-second (default 250000)
#   HEAPWATCH_E2E_TL_TASKS           ThreadLocalPoolApp's --tasks-per-tick (default 40: about 420 KB/s)
#   HEAPWATCH_E2E_DEPLOY_SECONDS     ClassLoaderLeakApp's --deploy-seconds (default 5)
#   HEAPWATCH_E2E_KEEP=1             keep the run's directory (heapwatchd.log, the JVMs' logs)
#
# Steps:
#  1. compile the programs into one jar each in this run's directory; start heapwatchd with nothing but a
#     data dir, ephemeral ports (port files) and a watch filter limited to this run's jars;
#  2. start the five JVMs (G1, -Xmx256m, the thread-local leak -Xmx384m) side by side; t=0 is their start;
#  3. every 5 s read `heapwatchctl agents --json` and `heapwatchctl leaks --json`; record when each JVM is
#     watched, when its live set is flagged as growing, when a leak of it is first listed (and its kind),
#     when its leaking class is named (the slow and thread-local leaks), when a class_loader leak is listed
#     (the class-loader leak), and every leak of a healthy JVM; stop as soon as every assertion is decided
#     (all three leaks found: the healthy JVMs were clean up to then), else after HEAPWATCH_E2E_WATCH_SECONDS;
#  4. print the timeline (t=0 at the JVMs' start) and, per JVM, the pause heapwatch caused over the time it
#     watched it (agents --json total_pause_seconds / watched time), its histograms (count and modes), its
#     live-set points, its planned interval and budget note; for every kind that was not found, what the
#     daemon did about that JVM (its log lines, its agents row, its live-set series, its class-loading
#     counters); then PASS or FAIL with the reasons.
# Every process started here is killed on every exit path (trap). Wall time: 4 to 11 minutes.
set -euo pipefail

heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL JAVA_SRC_DIR}
heapwatchctl=${2:?}
java_src=${3:?}
watch_s=${HEAPWATCH_E2E_WATCH_SECONDS:-600}
slow_name_s=${HEAPWATCH_E2E_SLOW_NAME_SECONDS:-480}
slow_rate=${HEAPWATCH_E2E_SLOW_RATE:-250000}
tl_tasks=${HEAPWATCH_E2E_TL_TASKS:-40}
deploy_s=${HEAPWATCH_E2E_DEPLOY_SECONDS:-5}
poll_s=5

# shellcheck source=e2e_lib.sh
E2E_LOG_LINES=20 source "$(dirname "$0")/e2e_lib.sh" heapwatch-defaults-e2e

# The JVMs: name -> main class, maximum heap, program arguments, the line it prints once running, and the
# regular expression a class named for its leak must match (empty: no class to name).
names=(slow threadlocal classloader healthy tlclean)
declare -A main_of heap_of args_of ready_of class_re_of
main_of=([slow]=HeapExhaustionApp [threadlocal]=ThreadLocalPoolApp [classloader]=ClassLoaderLeakApp
  [healthy]=HealthyApp [tlclean]=ThreadLocalPoolCleanApp)
heap_of=([slow]=256m [threadlocal]=384m [classloader]=256m [healthy]=256m [tlclean]=256m)
args_of=([slow]="--bytes-per-second $slow_rate" [threadlocal]="--tasks-per-tick $tl_tasks"
  [classloader]="--deploy-seconds $deploy_s" [healthy]="" [tlclean]="")
ready_of=([slow]='^HeapExhaustionApp leak-start ' [threadlocal]='^ThreadLocalPoolApp ready'
  [classloader]='^ClassLoaderLeakApp ready' [healthy]='^HealthyApp ready' [tlclean]='^ThreadLocalPoolCleanApp ready')
# The slow leak's own classes (default package); the thread-local leak's records: its byte[] buffers (or a
# class of the program, should the daemon name one).
class_re_of=([slow]='^HeapExhaustionApp([$.]|$)' [threadlocal]='^(byte\[\]|ThreadLocalPoolApp([$.]|$))')

# ---- 1. jars and heapwatchd at its defaults ---------------------------------------------------------------
mkdir -p "$tmp/classes" "$tmp/data"
javac -d "$tmp/classes" "$java_src/HeapExhaustionApp.java" "$java_src/ThreadLocalPoolApp.java" \
  "$java_src/ThreadLocalPoolCleanApp.java" "$java_src/ClassLoaderLeakApp.java" "$java_src/HealthyApp.java" \
  "$java_src/TestSupport.java"
# Each program runs from a jar in this run's directory: its main class as heapwatchd sees it (the jar's path)
# is unique to this run, so the watch filter ignores every other JVM on the machine.
for n in "${names[@]}"; do
  jar --create --file "$tmp/${main_of[$n]}.jar" --main-class "${main_of[$n]}" -C "$tmp/classes" .
done

cat >"$tmp/heapwatchd.yml" <<EOF
# Nothing but the watch filter: every other option is heapwatchd's shipped default.
watch:
  agents:
    include: ["$tmp/*.jar"]
EOF
defaults=$("$heapwatchd" --config "$tmp/heapwatchd.yml" --print-config |
  awk '/^[a-z_]+:/ { s = $1 } s == "collection:" && ($1 == "interval:" || $1 == "pause_budget:" ||
       $1 == "pause_budget_window:") || s == "trend:" && ($1 == "window_snapshots:" || $1 == "min_snapshots:" ||
       $1 == "warmup_snapshots:") || s == "escalation:" && $1 == "auto:" { printf "%s%s %s", sep, $1, $2; sep = ", " }')
"$heapwatchd" --config "$tmp/heapwatchd.yml" --data-dir "$tmp/data" \
  --grpc-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
  --grpc-port-file "$tmp/grpc.port" --metrics-port-file "$tmp/metrics.port" >"$tmp/heapwatchd.log" 2>&1 &
pids+=($!)
t_daemon_ms=$(date +%s%3N)
grpc_port=$(wait_port_file "$tmp/grpc.port" 30) || fail "heapwatchd wrote no gRPC port"
ctl=("$heapwatchctl" --server "127.0.0.1:$grpc_port" --timeout 5s)
log "heapwatchd up at its defaults ($defaults): gRPC 127.0.0.1:$grpc_port"

# ---- 2. the five JVMs ----------------------------------------------------------------------------------------
declare -A jvm_pid agent
t0_ms=$(date +%s%3N)
for n in "${names[@]}"; do
  # shellcheck disable=SC2086  # the program's arguments are words
  java "-Xmx${heap_of[$n]}" -XX:+UseG1GC -jar "$tmp/${main_of[$n]}.jar" ${args_of[$n]} \
    --max-seconds $((watch_s + 300)) >"$tmp/$n.log" 2>&1 &
  jvm_pid[$n]=$!
  pids+=("${jvm_pid[$n]}")
done
t_start_ms=$t0_ms  # log and elapsed count from the JVMs' start from here on
for n in "${names[@]}"; do
  for _ in $(seq 600); do
    grep -qE "${ready_of[$n]}" "$tmp/$n.log" 2>/dev/null && break
    kill -0 "${jvm_pid[$n]}" 2>/dev/null || fail "${main_of[$n]} exited at start-up: $(tail -5 "$tmp/$n.log")"
    sleep 0.1
  done
  grep -qE "${ready_of[$n]}" "$tmp/$n.log" || fail "${main_of[$n]} printed no ready line within 60 s"
done
log "JVMs running: $(for n in "${names[@]}"; do printf '%s pid %s (-Xmx%s %s); ' "${main_of[$n]}" \
  "${jvm_pid[$n]}" "${heap_of[$n]}" "${args_of[$n]:-no arguments}"; done)"

now_ms() { date +%s%3N; }
# Seconds since t0 of an epoch-ms time, with one decimal.
rel() {
  local ms=$(($1 - t0_ms)) sign=
  ((ms < 0)) && sign=- ms=$((-ms))
  printf '%s%d.%d' "$sign" $((ms / 1000)) $((ms % 1000 / 100))
}
# Tenths of a second of a "12.3" time.
tenths() { local s=${1#-} t; t=$((10#${s%.*} * 10 + ${s#*.})); [[ $1 == -* ]] && t=$((-t)); echo "$t"; }

# ---- 3. watch ------------------------------------------------------------------------------------------------
declare -A t_watched t_growing growing_rate t_listed listed_kind listed_id t_heap t_named named_main named_classes
declare -A named_id t_cl cl_detail cl_id t_healthy_leak healthy_leak t_died died_how
for n in "${names[@]}"; do
  t_watched[$n]='' t_growing[$n]='' growing_rate[$n]='' t_listed[$n]='' listed_kind[$n]='' listed_id[$n]=''
  t_heap[$n]='' t_named[$n]='' named_main[$n]='' named_classes[$n]='' named_id[$n]='' t_cl[$n]='' cl_detail[$n]=''
  cl_id[$n]='' t_healthy_leak[$n]='' healthy_leak[$n]='' t_died[$n]='' died_how[$n]='' agent[$n]=''
done
agents='{}' leaks='{}'
deadline_ms=$((t0_ms + watch_s * 1000))
polls=0
while (($(now_ms) < deadline_ms)); do
  next_ms=$(($(now_ms) + poll_s * 1000))
  polls=$((polls + 1))
  agents=$("${ctl[@]}" --json agents 2>/dev/null || echo '{}')
  leaks=$("${ctl[@]}" --json leaks 2>/dev/null || echo '{}')
  for n in "${names[@]}"; do
    if [[ -z ${t_died[$n]} ]] && ! kill -0 "${jvm_pid[$n]}" 2>/dev/null; then
      t_died[$n]=$(elapsed) died_how[$n]=$(tail -2 "$tmp/$n.log" | tr '\n' ' ')
      log "${main_of[$n]} EXITED: ${died_how[$n]}"
    fi
    if [[ -z ${agent[$n]} ]]; then
      agent[$n]=$(jq -r --argjson p "${jvm_pid[$n]}" '[.agents[]? | select(.pid == $p)][0].agent // empty' <<<"$agents")
      if [[ -n ${agent[$n]} ]]; then t_watched[$n]=$(elapsed); log "heapwatchd watches ${main_of[$n]}: ${agent[$n]}"; fi
    fi
    a=${agent[$n]}
    [[ -n $a ]] || continue
    if [[ -z ${t_growing[$n]} ]]; then
      rate=$(jq -r --arg a "$a" '.agents[]? | select(.agent == $a and .live_set_growth_bytes_per_second > 0)
             | .live_set_growth_bytes_per_second | floor' <<<"$agents")
      if [[ -n $rate ]]; then
        t_growing[$n]=$(elapsed) growing_rate[$n]=$rate
        log "${main_of[$n]}: heapwatchd flags its live set as growing, $rate bytes/s"
      fi
    fi
    mine=$(jq -c --arg a "$a" '[.leaks[]? | select(.agent == $a)]' <<<"$leaks")
    [[ $mine != "[]" ]] || continue
    case $n in
      healthy | tlclean)
        if [[ -z ${t_healthy_leak[$n]} ]]; then
          t_healthy_leak[$n]=$(elapsed)
          healthy_leak[$n]=$(jq -c '[.[] | {leak, kind: (.kind // "classes"), main_class, classes, detail}]' <<<"$mine")
          log "LEAK LISTED FOR THE HEALTHY ${main_of[$n]}: ${healthy_leak[$n]}"
        fi
        continue
        ;;
    esac
    if [[ -z ${t_listed[$n]} ]]; then
      t_listed[$n]=$(elapsed) listed_kind[$n]=$(jq -r '.[0].kind // "classes"' <<<"$mine")
      listed_id[$n]=$(jq -r '.[0].leak' <<<"$mine")
      log "${main_of[$n]}: heapwatchctl leaks lists leak ${listed_id[$n]} of kind '${listed_kind[$n]}'" \
        "(main class '$(jq -r '.[0].main_class' <<<"$mine")')"
    fi
    if [[ -z ${t_heap[$n]} ]] && jq -e 'any(.[]; .kind == "heap")' <<<"$mine" >/dev/null; then
      t_heap[$n]=$(elapsed)
      log "${main_of[$n]}: a leak of kind heap is listed ($(jq -r '[.[] | select(.kind == "heap")][0].leak' <<<"$mine"))"
    fi
    if [[ -z ${t_cl[$n]} ]]; then
      cl=$(jq -c '[.[] | select(.kind == "class_loader")][0] // empty' <<<"$mine")
      if [[ -n $cl ]]; then
        t_cl[$n]=$(elapsed) cl_id[$n]=$(jq -r .leak <<<"$cl") cl_detail[$n]=$(jq -r '.detail // ""' <<<"$cl")
        log "${main_of[$n]}: class_loader leak ${cl_id[$n]} listed: ${cl_detail[$n]}"
      fi
    fi
    if [[ -z ${t_named[$n]} && -n ${class_re_of[$n]:-} ]]; then
      named=$(jq -c --arg re "${class_re_of[$n]}" '[.[] | select(((.classes // []) + [.main_class // ""])
              | any(test($re)))][0] // empty' <<<"$mine")
      if [[ -n $named ]]; then
        t_named[$n]=$(elapsed) named_main[$n]=$(jq -r .main_class <<<"$named") named_id[$n]=$(jq -r .leak <<<"$named")
        named_classes[$n]=$(jq -r '.classes | join(", ")' <<<"$named")
        log "${main_of[$n]}: heapwatchctl leaks names ${named_main[$n]} in leak ${named_id[$n]} (classes: ${named_classes[$n]})"
      fi
    fi
  done
  # Decided: every leak found (the healthy JVMs were clean until then), or a leaking JVM died.
  [[ -n ${t_named[slow]} && -n ${t_named[threadlocal]} && -n ${t_cl[classloader]} ]] && break
  [[ -n ${t_died[slow]}${t_died[threadlocal]}${t_died[classloader]} ]] && break
  while (($(now_ms) < next_ms)); do sleep 0.5; done
done
t_end=$(elapsed)
log "stopped watching after $polls polls"

# ---- 4. timeline, cost, diagnostics, verdict -------------------------------------------------------------------
agents=$("${ctl[@]}" --json agents 2>/dev/null || echo '{}')
agents_table=$("${ctl[@]}" agents 2>/dev/null || true)
events=()
ev() { events+=("${1:-never}"$'\t'"$2"); }
ev "$(rel "$t_daemon_ms")" "heapwatchd started"
for n in "${names[@]}"; do
  m=${main_of[$n]}
  ev "${t_watched[$n]}" "$m watched (${agent[$n]:-no agent})"
  [[ -n ${t_died[$n]} ]] && ev "${t_died[$n]}" "$m EXITED: ${died_how[$n]}"
  case $n in
    healthy | tlclean)
      [[ -n ${t_growing[$n]} ]] && ev "${t_growing[$n]}" "$m: live set flagged as growing (${growing_rate[$n]} bytes/s)"
      [[ -n ${t_healthy_leak[$n]} ]] && ev "${t_healthy_leak[$n]}" "$m (HEALTHY) has a leak: ${healthy_leak[$n]}"
      continue
      ;;
    classloader)
      [[ -n ${t_growing[$n]} ]] && ev "${t_growing[$n]}" "$m: live set flagged as growing (${growing_rate[$n]} bytes/s)"
      [[ -n ${t_listed[$n]} && ${listed_kind[$n]} != class_loader ]] &&
        ev "${t_listed[$n]}" "$m: a leak of kind '${listed_kind[$n]}' listed (${listed_id[$n]})"
      ev "${t_cl[$n]}" "$m: class_loader leak listed${cl_id[$n]:+ (${cl_id[$n]}: ${cl_detail[$n]})}"
      continue
      ;;
  esac
  ev "${t_growing[$n]}" "$m: live set flagged as growing${growing_rate[$n]:+ (${growing_rate[$n]} bytes/s)}"
  ev "${t_listed[$n]}" "$m: first leak listed${listed_id[$n]:+ (${listed_id[$n]}, kind ${listed_kind[$n]})}"
  [[ -n ${t_heap[$n]} && ${t_heap[$n]} != "${t_listed[$n]}" ]] && ev "${t_heap[$n]}" "$m: a leak of kind heap listed"
  ev "${t_named[$n]}" "$m: class named${named_main[$n]:+: ${named_main[$n]} (leak ${named_id[$n]}; classes ${named_classes[$n]})}"
done
echo
echo "timeline (seconds; t=0: the five JVMs start; heapwatchd at its defaults: $defaults):"
printf '%s\n' "${events[@]}" | sed 's/^never\t/1e9\t/' | sort -s -t$'\t' -k1,1g | sed 's/^1e9\t/never\t/' |
  awk -F'\t' '{ printf "  %-8s %s\n", $1, $2 }'

echo
echo "cost and collection per JVM at t=$t_end (pause = total pause heapwatch caused / time watched):"
printf '  %-24s %-22s %-8s %-10s %-9s %-24s %-16s %s\n' JVM AGENT "PAUSE" "WATCHED" "SHARE" HISTOGRAMS "LIVE-SET PTS" "INTERVAL / NOTE"
for n in "${names[@]}"; do
  a=${agent[$n]}
  if [[ -z $a ]]; then printf '  %-24s never watched\n' "${main_of[$n]}"; continue; fi
  row=$(jq -c --arg a "$a" '[.agents[]? | select(.agent == $a)][0] // {}' <<<"$agents")
  read -r total frac planned <<<"$(jq -r '"\(.total_pause_seconds // 0) \(.paused_fraction // 0) \(.planned_interval_seconds // 0)"' <<<"$row")"
  note=$(jq -r '.budget_note // ""' <<<"$row")
  watched=$(awk -v t="$total" -v f="$frac" 'BEGIN { if (f > 0) printf "%.0fs", t / f; else print "-" }')
  share=$(awk -v f="$frac" 'BEGIN { printf "%.3f%%", 100 * f }')
  # The histograms: every one has a byte[] row; mode counts.
  hist=$({ "${ctl[@]}" --json history "$a" 'byte[]' 2>/dev/null || echo '{}'; } |
    jq -r '[.points[]?.mode] | "\(length) (" + (group_by(.) | map("\(.[0]) \(length)") | join(", ")) + ")"')
  lsp=$({ "${ctl[@]}" --json liveset "$a" 2>/dev/null || echo '{}'; } |
    jq -r '[.points[]? | select(.source != "young_upper_bound")] | "\(length) exact"')
  printf '  %-24s %-22s %-8s %-10s %-9s %-24s %-16s %s\n' "${main_of[$n]}" "$a" "$(printf '%.3fs' "$total")" \
    "$watched" "$share" "$hist" "$lsp" "$(printf '%.0fs' "$planned")${note:+; $note}"
done

# What the daemon did about a JVM whose leak was not found: its log lines, its agents row and notes, its
# live-set series and class-loading counters.
diagnose() {
  local n=$1 a=${agent[$1]}
  echo "---- what heapwatchd did about ${main_of[$n]} (${a:-never watched}):"
  [[ -n $a ]] || return 0
  echo "agents row:"
  grep -F "$a" <<<"$agents_table" | sed 's/^/  /' || true
  jq -r --arg a "$a" '.agents[]? | select(.agent == $a) | "  state \(.state), mode \(.histogram_mode), last pause
  \(.last_pause_seconds)s, total pause \(.total_pause_seconds)s (\(.paused_fraction * 100 | tostring | .[0:6]) %),
  planned interval \(.planned_interval_seconds)s, over budget \(.over_budget), note: \(.budget_note)
  live \(.live_bytes // 0 | floor) B of max \(.heap_max_bytes // 0 | floor) B, live-set growth
  \(.live_set_growth_bytes_per_second) B/s, classes loaded \(.classes_loaded // "-"), unloaded
  \(.classes_unloaded // "-"), metaspace \(.metaspace_used_bytes // "-") B, suspects \(.suspect_count)"' <<<"$agents" |
    tr -s ' \n' ' ' | sed 's/^/  /'
  echo
  echo "heapwatchctl liveset (last 15 points):"
  { "${ctl[@]}" liveset "$a" 2>&1 || true; } | tail -15 | sed 's/^/  /'
  echo "heapwatchctl history $a byte[] (the histograms, last 15):"
  { "${ctl[@]}" history "$a" 'byte[]' 2>&1 || true; } | tail -15 | sed 's/^/  /'
  echo "heapwatchctl suspects:"
  { "${ctl[@]}" suspects 2>&1 || true; } | grep -F "$a" | sed 's/^/  /' || echo "  (none)"
  echo "heapwatchd.log lines about $a (last 40 of $(grep -cF "$a" "$tmp/heapwatchd.log" || true)):"
  { grep -F "$a" "$tmp/heapwatchd.log" || true; } | tail -40 | sed 's/^/  /'
}

echo
failures=()
for n in slow threadlocal classloader; do
  if [[ -n ${t_died[$n]} ]]; then
    failures+=("${main_of[$n]} exited at t=${t_died[$n]} before its leak was decided: ${died_how[$n]}")
  fi
done
if [[ -z ${t_named[slow]} ]]; then
  failures+=("slow leak: ${main_of[slow]}'s class never named within ${t_end}s (listed: ${t_listed[slow]:-never}${listed_kind[slow]:+, kind ${listed_kind[slow]}}; live set flagged as growing: ${t_growing[slow]:-never})")
elif (($(tenths "${t_named[slow]}") > slow_name_s * 10)); then
  failures+=("slow leak: ${named_main[slow]} named only at t=${t_named[slow]}s, later than ${slow_name_s}s (listed at t=${t_listed[slow]}s, kind ${listed_kind[slow]})")
else
  echo "slow leak: listed at t=${t_listed[slow]}s (kind ${listed_kind[slow]}), ${named_main[slow]} named at t=${t_named[slow]}s (limit ${slow_name_s}s)"
fi
if [[ -z ${t_named[threadlocal]} ]]; then
  failures+=("thread-local leak: ${main_of[threadlocal]}'s record class (byte[]) never named within ${t_end}s (listed: ${t_listed[threadlocal]:-never}${listed_kind[threadlocal]:+, kind ${listed_kind[threadlocal]}}; live set flagged as growing: ${t_growing[threadlocal]:-never})")
else
  echo "thread-local leak: listed at t=${t_listed[threadlocal]}s (kind ${listed_kind[threadlocal]}), ${named_main[threadlocal]} named at t=${t_named[threadlocal]}s"
fi
if [[ -z ${t_cl[classloader]} ]]; then
  # The class-loading counters are read once per histogram: the readings the class-loading trend had.
  readings=0
  if [[ -n ${agent[classloader]} ]]; then
    readings=$({ "${ctl[@]}" --json history "${agent[classloader]}" 'byte[]' 2>/dev/null || echo '{}'; } |
      jq '[.points[]?] | length')
  fi
  failures+=("class-loader leak: no leak of kind class_loader listed for ${main_of[classloader]} within ${t_end}s (${readings} class-loading readings, one per histogram)${t_listed[classloader]:+; a leak of kind '${listed_kind[classloader]}' was listed at t=${t_listed[classloader]}s}")
else
  echo "class-loader leak: class_loader leak listed at t=${t_cl[classloader]}s: ${cl_detail[classloader]}"
fi
for n in healthy tlclean; do
  if [[ -n ${t_healthy_leak[$n]} ]]; then
    failures+=("healthy ${main_of[$n]} has a leak from t=${t_healthy_leak[$n]}s: ${healthy_leak[$n]}")
  elif [[ -n ${t_died[$n]} ]]; then
    failures+=("healthy ${main_of[$n]} exited at t=${t_died[$n]}s: ${died_how[$n]}")
  elif [[ -z ${agent[$n]} ]]; then
    failures+=("healthy ${main_of[$n]} was never watched")
  else
    echo "healthy ${main_of[$n]}: no leak at any of $polls polls up to t=${t_end}s"
  fi
done
if ((${#failures[@]} > 0)); then
  [[ -z ${t_named[slow]} ]] && diagnose slow
  [[ -z ${t_named[threadlocal]} ]] && diagnose threadlocal
  [[ -z ${t_cl[classloader]} ]] && diagnose classloader
  for n in healthy tlclean; do [[ -n ${t_healthy_leak[$n]} ]] && diagnose "$n"; done
  for f in "${failures[@]}"; do echo "FAIL: $f" >&2; done
  exit 1
fi
ok=1
echo "PASS: leaks at defaults (slow leak named at t=${t_named[slow]}s, thread-local at t=${t_named[threadlocal]}s, class loader at t=${t_cl[classloader]}s; healthy JVMs clean)"
