#!/usr/bin/env bash
# End to end: a JVM that leaks until it dies of an OutOfMemoryError pages its owner before it dies, with
# heapwatchd as users get it and the shipped alert rules as users load them.
#
# What it proves: with heapwatchd at its shipped defaults (1 minute between histograms, the default pause
# budget and trend options) and a Prometheus that scrapes and evaluates every 15 s (a common production
# setting) with dashboards/heapwatch-alerts.yml unmodified (`for:` durations included), a service that
# leaks about 1 MB/s into a 256 MiB heap, and so dies of an OutOfMemoryError about 4 minutes after the
# leak starts, has HeapwatchHeapExhaustionSoon (critical) firing for its agent at least 60 s before it
# dies, and `heapwatchctl leaks` names the leaking class (the application's record class, not just byte[])
# before it dies; a healthy JVM watched beside it never has a leak or heap exhaustion alert, not even
# pending. A user who runs heapwatch as shipped is paged in time to act on a leak that kills a JVM within
# minutes, and is told which class leaks.
#
# The same on a real application (with REALAPP_DIR): the leaking JVM is Debian's Tomcat 10 running the shop
# webapp of tests/e2e/realapp in its leak mode (every visitor's HTTP session, with its ShoppingCart, is kept
# forever), -Xmx128m, under wrk (HEAPWATCH_E2E_WRK_CONNECTIONS connections, each pausing
# HEAPWATCH_E2E_WRK_DELAY_MS after every response; no cookies: every request is a new visitor); the healthy
# one is a second Tomcat with the same webapp in its healthy mode (sessions invalidated) under the same load.
# The leak starts with the load (t=0); the leaking Tomcat runs with -XX:+ExitOnOutOfMemoryError and an
# -XX:OnOutOfMemoryError command that prints "OOM <epoch-ms>". The class to name is
# org.heapwatch.e2e.ShoppingCart (or Tomcat's StandardSession that holds it).
#
# Usage: heap_exhaustion_e2e.sh HEAPWATCHD HEAPWATCHCTL RULES_YML JAVA_SRC_DIR [REALAPP_DIR]
#   JAVA_SRC_DIR holds HeapExhaustionApp.java, HealthyApp.java and TestSupport.java (tests/e2e/java).
#   REALAPP_DIR  tests/e2e/realapp: run the Tomcat variant (needs tomcat10, wrk: scripts/deps.sh)
#   HEAPWATCH_E2E_LEAK_RATE      HeapExhaustionApp's --bytes-per-second (default 1100000: OOM ~4 min after the start)
#   HEAPWATCH_E2E_OOM_TIMEOUT    seconds after the leak start by which the JVM must have died (default 360;
#                                Tomcat: 600)
#   HEAPWATCH_E2E_WRK_CONNECTIONS, HEAPWATCH_E2E_WRK_DELAY_MS  the Tomcat load (defaults 8 and 20:
#                                the live set grew 276 KB/s, OOM 390 s after the load started, 2026-12-05)
#   HEAPWATCH_E2E_MIN_LEAD       seconds the critical alert must fire before the OOM (default 60)
#
# Steps:
#  1. compile the Java programs into jars in this run's directory; start heapwatchd with nothing but a data
#     dir, ephemeral ports (learned from the port files) and a watch filter limited to this run's jars (so
#     that no other JVM on the machine is attached to): no --interval, no pause budget, no trend option;
#  2. start Prometheus on 127.0.0.1:<free port> with scrape_interval and evaluation_interval 15s, the
#     shipped rules file by its own path (unmodified) and a temporary TSDB;
#  3. start HeapExhaustionApp (-Xmx256m -XX:+UseG1GC; it prints the epoch ms at which it starts leaking,
#     and "OOM <epoch-ms>" when it catches the OutOfMemoryError, then exits with code 3) and HealthyApp in
#     its ordinary mode, side by side;
#  4. until HeapExhaustionApp is dead: every 2 s read Prometheus' /api/v1/alerts (and the exhaustion
#     estimate series), every 5 s `heapwatchctl leaks --json`; record when HeapwatchHeapExhaustionSoon is
#     first pending and firing for the leaking agent, when `leaks` first lists a leak of it (a "heap"
#     leak, before its classes are named) and when it first names a class of the application
#     (HeapExhaustionApp or HeapExhaustionApp$...), and every leak or heap exhaustion alert of the healthy
#     agent;
#  5. prints the timeline (t=0 at the leak start) and the estimate against the time actually left, then
#     asserts: the critical alert fired at least HEAPWATCH_E2E_MIN_LEAD s before the OOM (prints the lead
#     time), `leaks` named the leaking class before the OOM, no HeapwatchLeak*/HeapwatchHeapExhaustion*
#     alert was ever pending or firing for the healthy agent.
# Every process started here is killed on every exit path (trap). Wall time: about 4 minutes (the JVM dies
# about 240 s after it starts; the script ends when it has died).
set -euo pipefail

heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL RULES_YML JAVA_SRC_DIR}
heapwatchctl=${2:?}
rules=$(realpath "${3:?}")  # Prometheus resolves rule_files relative to its configuration file
java_src=${4:?}
realapp=${5:-}
leak_rate=${HEAPWATCH_E2E_LEAK_RATE:-1100000}
min_lead_s=${HEAPWATCH_E2E_MIN_LEAD:-60}
if [[ -z $realapp ]]; then
  oom_timeout_s=${HEAPWATCH_E2E_OOM_TIMEOUT:-360}
  app_class_re='^HeapExhaustionApp([$.]|$)'  # the leaking application's own classes (default package)
  leaky_label=HeapExhaustionApp healthy_label=HealthyApp heap=256m
  leaky_log_name=exhaustion.log
  leak_what="leaking at $leak_rate bytes/s"
else
  oom_timeout_s=${HEAPWATCH_E2E_OOM_TIMEOUT:-600}
  # The webapp's record class, or Tomcat's session that holds it.
  app_class_re='^(org\.heapwatch\.e2e\.ShoppingCart|org\.apache\.catalina\.session\.StandardSession)$'
  leaky_label="Tomcat (leaking sessions)" healthy_label="Tomcat (healthy)" heap=128m
  leaky_log_name=tomcat-leak.log
  wrk_connections=${HEAPWATCH_E2E_WRK_CONNECTIONS:-8}
  wrk_delay_ms=${HEAPWATCH_E2E_WRK_DELAY_MS:-20}
  leak_what="under wrk -c$wrk_connections (${wrk_delay_ms} ms between requests per connection)"
fi
bad_alert_re='^Heapwatch(Leak|HeapExhaustion)'

# shellcheck source=../e2e/e2e_lib.sh
source "$(dirname "$0")/../e2e/e2e_lib.sh" heapwatch-exhaustion-e2e

grep -qE '^[[:space:]]*-[[:space:]]*alert:[[:space:]]*HeapwatchHeapExhaustionSoon[[:space:]]*$' "$rules" ||
  fail "$rules has no HeapwatchHeapExhaustionSoon rule"
promtool check rules "$rules" >/dev/null || fail "promtool check rules $rules failed"

# ---- 1. jars and heapwatchd at its defaults ---------------------------------------------------------------
mkdir -p "$tmp/classes" "$tmp/data"
if [[ -z $realapp ]]; then
  javac -d "$tmp/classes" "$java_src/HeapExhaustionApp.java" "$java_src/HealthyApp.java" \
    "$java_src/TestSupport.java"
  # Each program runs from a jar in this run's directory: its main class as heapwatchd sees it (the jar's
  # path) is unique to this run, so the watch filter ignores every other JVM on the machine.
  for app in HeapExhaustionApp HealthyApp; do
    jar --create --file "$tmp/$app.jar" --main-class "$app" -C "$tmp/classes" .
  done
else
  for tool in wrk curl; do command -v "$tool" >/dev/null || fail "$tool is missing (scripts/deps.sh)"; done
  servlet_api=/usr/share/tomcat10/lib/servlet-api.jar
  [[ -f $servlet_api ]] || fail "Tomcat 10 is not installed (apt-get install tomcat10)"
  # Each Tomcat runs as `java -jar $tmp/<name>/tomcat.jar` (tomcat_launch): the watch filter below matches it.
  javac -nowarn -d "$tmp/classes" -cp "$servlet_api" "$realapp"/tomcat/src/org/heapwatch/e2e/*.java
fi

cat >"$tmp/heapwatchd.yml" <<EOF
# Nothing but the watch filter: every other option is heapwatchd's shipped default.
watch:
  agents:
    include: ["$tmp/*.jar"]
EOF
# The defaults this run exercises, for the record.
defaults=$("$heapwatchd" --config "$tmp/heapwatchd.yml" --print-config |
  awk '/^[a-z_]+:/ { s = $1 } s == "collection:" && ($1 == "interval:" || $1 == "pause_budget:") ||
       s == "trend:" && ($1 == "window_snapshots:" || $1 == "min_snapshots:" || $1 == "warmup_snapshots:") {
         printf "%s%s %s", sep, $1, $2; sep = ", " }')
"$heapwatchd" --config "$tmp/heapwatchd.yml" --data-dir "$tmp/data" \
  --grpc-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
  --grpc-port-file "$tmp/grpc.port" --metrics-port-file "$tmp/metrics.port" >"$tmp/heapwatchd.log" 2>&1 &
pids+=($!)
t_daemon_ms=$(date +%s%3N)
metrics_port=$(wait_port_file "$tmp/metrics.port" 30) || fail "heapwatchd wrote no metrics port"
grpc_port=$(wait_port_file "$tmp/grpc.port" 30) || fail "heapwatchd wrote no gRPC port"
ctl=("$heapwatchctl" --server "127.0.0.1:$grpc_port" --timeout 5s --json)
log "heapwatchd up at its defaults ($defaults): metrics 127.0.0.1:$metrics_port, gRPC 127.0.0.1:$grpc_port"

# ---- 2. Prometheus with the shipped rules ----------------------------------------------------------------
start_prometheus "$rules" "$metrics_port"
n_rules=$(curl -sf "$prom_url/api/v1/rules" |
  jq '[.data.groups[].rules[] | select(.name == "HeapwatchHeapExhaustionSoon" or .name == "HeapwatchHeapExhaustion")] | length')
((n_rules == 2)) || fail "Prometheus did not load HeapwatchHeapExhaustionSoon and HeapwatchHeapExhaustion from $rules"
log "prometheus ready at $prom_url (scrape and evaluation every 15s, rules: $rules unmodified)"

# PromQL instant query; prints the API's JSON.
query() { curl -sfG "$prom_url/api/v1/query" --data-urlencode "query=$1"; }

# ---- 3. the two JVMs ---------------------------------------------------------------------------------------
if [[ -n $realapp ]]; then
  declare -A url
  tomcat_opts=(-Xms64m "-Xmx$heap" -XX:+UseG1GC -Djava.awt.headless=true)
  tomcat_shop tomcat-healthy healthy "$realapp" "$tmp/classes" "${tomcat_opts[@]}"
  healthy_pid=${pid_of[tomcat-healthy]}
  # HotSpot runs the OnOutOfMemoryError command with /bin/sh -c after expanding %% to %.
  tomcat_shop tomcat-leak leak "$realapp" "$tmp/classes" "${tomcat_opts[@]}" -XX:+ExitOnOutOfMemoryError \
    "-XX:OnOutOfMemoryError=date +'OOM %%s%%3N'"
  leaky_pid=${pid_of[tomcat-leak]}
  # When the leaking Tomcat ends (bash reaps its children, so kill -0 fails once it has exited).
  ( while kill -0 "$leaky_pid" 2>/dev/null; do sleep 0.2; done; echo "- $(date +%s%3N)" >"$tmp/exhaustion.exit" ) &
  pids+=($!)
  wait_http 120 'sku=1' tomcat-healthy tomcat-leak
  t0_ms=$(date +%s%3N)
  for n in tomcat-healthy tomcat-leak; do
    LOAD_PATH=/shop/cart LOAD_PARAMS=cart LOAD_DELAY_MS=$wrk_delay_ms \
      wrk -t1 -c"$wrk_connections" -d"$((oom_timeout_s + 60))s" -s "$realapp/load.lua" \
      "http://127.0.0.1:${port[$n]}/" >"$tmp/wrk-$n.txt" 2>&1 </dev/null &
    pids+=($!)
  done
  t_start_ms=$t0_ms
  log "Tomcat pids: leaking $leaky_pid, healthy $healthy_pid; load started at t=0 on both"
else
java -Xmx256m -XX:+UseG1GC -jar "$tmp/HealthyApp.jar" --max-seconds $((oom_timeout_s + 180)) \
  >"$tmp/healthy.log" 2>&1 &
healthy_pid=$!
pids+=("$healthy_pid")
# The leaking JVM under a subshell that records when and how it ended (its pid comes from its first line;
# killing the subshell makes the JVM exit within a second, TestSupport.exitWhenParentDies).
(
  java -Xmx256m -XX:+UseG1GC -jar "$tmp/HeapExhaustionApp.jar" --bytes-per-second "$leak_rate" \
    --max-seconds $((oom_timeout_s + 60)) >"$tmp/exhaustion.log" 2>&1 && rc=0 || rc=$?
  echo "$rc $(date +%s%3N)" >"$tmp/exhaustion.exit"
) &
pids+=($!)
start_line=''
for _ in $(seq 300); do
  start_line=$(grep -m1 '^HeapExhaustionApp leak-start ' "$tmp/exhaustion.log" 2>/dev/null) && break
  [[ -e $tmp/exhaustion.exit ]] && fail "HeapExhaustionApp exited at start-up"
  sleep 0.1
done
[[ -n $start_line ]] || fail "HeapExhaustionApp printed no leak-start line within 30 s"
t0_ms=$(awk '{ print $3 }' <<<"$start_line")
leaky_pid=$(sed -E 's/.* pid=([0-9]+).*/\1/' <<<"$start_line")
[[ $t0_ms =~ ^[0-9]+$ && $leaky_pid =~ ^[0-9]+$ ]] || fail "cannot parse '$start_line'"
pids+=("$leaky_pid")
t_start_ms=$t0_ms  # log and elapsed count from the leak start from here on
log "HeapExhaustionApp pid $leaky_pid leaks $leak_rate bytes/s from t=0; HealthyApp pid $healthy_pid"
fi

# Seconds of an epoch-ms time since the leak start, with one decimal (negative before it).
rel() {
  local ms=$(($1 - t0_ms)) sign=
  ((ms < 0)) && sign=- ms=$((-ms))
  printf '%s%d.%d' "$sign" $((ms / 1000)) $((ms % 1000 / 100))
}
now_ms() { date +%s%3N; }

# ---- 4. watch until the leaking JVM is dead -----------------------------------------------------------------
leaky_agent='' healthy_agent='' t_agents=''
t_estimate='' first_estimate='' last_estimate_key=''
t_soon_pending='' t_soon_firing='' soon_firing_value='' soon_active_at=''
t_warn_pending='' t_leak_alert='' t_growing='' growing_rate=''
t_listed='' listed_kind='' listed_id='' t_heap_leak='' heap_leak_id=''
t_named='' named_id='' named_main='' named_classes=''
healthy_bad='' t_healthy_bad='' healthy_leak_listed=''
next_leaks_ms=0
: >"$tmp/estimates.txt"
deadline_ms=$((t0_ms + oom_timeout_s * 1000))
while [[ ! -e $tmp/exhaustion.exit ]]; do
  (($(now_ms) <= deadline_ms)) ||
    fail "$leaky_label did not die within ${oom_timeout_s}s of its leak start (is the heap bigger than $heap?)"

  if [[ -z $leaky_agent || -z $healthy_agent ]]; then
    agents=$("${ctl[@]}" agents 2>/dev/null || echo '{}')
    leaky_agent=$(jq -r --argjson p "$leaky_pid" '[.agents[]? | select(.pid == $p)][0].agent // empty' <<<"$agents")
    healthy_agent=$(jq -r --argjson p "$healthy_pid" '[.agents[]? | select(.pid == $p)][0].agent // empty' <<<"$agents")
    if [[ -n $leaky_agent && -n $healthy_agent ]]; then
      t_agents=$(elapsed)
      log "heapwatchd watches both: $leaky_label=$leaky_agent $healthy_label=$healthy_agent"
    fi
  fi

  alerts=$(curl -sf "$prom_url/api/v1/alerts") || fail "GET /api/v1/alerts failed"
  if [[ -n $healthy_agent ]]; then
    bad=$(jq -c --arg h "$healthy_agent" --arg re "$bad_alert_re" '[.data.alerts[] | select(.labels.agent == $h)
          | select(.labels.alertname | test($re)) | {alertname: .labels.alertname, state, value}]' <<<"$alerts")
    if [[ $bad != "[]" && -z $t_healthy_bad ]]; then
      t_healthy_bad=$(elapsed) healthy_bad=$bad
      log "ALERT FOR THE HEALTHY JVM: $bad"
    fi
  fi
  if [[ -n $leaky_agent ]]; then
    soon=$(jq -c --arg a "$leaky_agent" '[.data.alerts[] | select(.labels.alertname == "HeapwatchHeapExhaustionSoon"
           and .labels.agent == $a)][0] // empty' <<<"$alerts")
    if [[ -n $soon ]]; then
      state=$(jq -r .state <<<"$soon")
      if [[ -z $t_soon_pending ]]; then
        t_soon_pending=$(elapsed)
        log "HeapwatchHeapExhaustionSoon $state (value $(jq -r '.value | tonumber | floor' <<<"$soon") s)"
      fi
      if [[ $state == firing && -z $t_soon_firing ]]; then
        t_soon_firing=$(elapsed) soon_firing_value=$(jq -r '.value | tonumber | floor' <<<"$soon") soon_active_at=$(jq -r .activeAt <<<"$soon")
        log "HeapwatchHeapExhaustionSoon FIRING (value $soon_firing_value s, active since $soon_active_at)"
      fi
    fi
    if [[ -z $t_warn_pending ]] && jq -e --arg a "$leaky_agent" 'any(.data.alerts[];
         .labels.alertname == "HeapwatchHeapExhaustion" and .labels.agent == $a)' <<<"$alerts" >/dev/null; then
      t_warn_pending=$(elapsed)
      log "HeapwatchHeapExhaustion (warning) pending"
    fi
    if [[ -z $t_leak_alert ]] && jq -e --arg a "$leaky_agent" 'any(.data.alerts[];
         (.labels.alertname | startswith("HeapwatchLeak")) and .labels.agent == $a)' <<<"$alerts" >/dev/null; then
      t_leak_alert=$(elapsed)
      log "a HeapwatchLeak* alert is pending for the leaking JVM"
    fi

    # The estimate as Prometheus has it (new values every scrape).
    est=$(query "{__name__=~\"heapwatch_heap_exhaustion(_soonest|_latest)?_seconds\",agent=\"$leaky_agent\"}" |
      jq -r '[.data.result[]? | {(.metric.__name__ | sub("^heapwatch_heap_exhaustion_?"; "")):
               (.value[1] | (tonumber? // .) | if type != "number" then . elif . > 1e15 then "inf" else floor end)}] | add // {}
             | if length == 0 then empty else "\(.seconds // "-") \(.soonest_seconds // "-") \(.latest_seconds // "-")" end' ||
      true)
    if [[ -n $est && $est != "$last_estimate_key" ]]; then
      last_estimate_key=$est
      echo "$(now_ms) $est" >>"$tmp/estimates.txt"
      if [[ -z $t_estimate ]]; then
        t_estimate=$(elapsed) first_estimate=$est
        log "heapwatch_heap_exhaustion_seconds scraped: estimate/soonest/latest $est s"
      fi
    fi
  fi

  if (($(now_ms) >= next_leaks_ms)) && [[ -n $leaky_agent ]]; then
    next_leaks_ms=$(($(now_ms) + 5000))
    if [[ -z $t_growing ]]; then  # the live-set trend as heapwatchd has it (a diagnostic for the timeline)
      growing_rate=$("${ctl[@]}" agents 2>/dev/null | jq -r --arg a "$leaky_agent" '.agents[]? | select(.agent == $a
                     and .live_set_growth_bytes_per_second > 0) | .live_set_growth_bytes_per_second | floor' || true)
      if [[ -n $growing_rate ]]; then
        t_growing=$(elapsed)
        log "heapwatchctl agents: the live set grows by $growing_rate bytes/s"
      fi
    fi
    leaks=$("${ctl[@]}" leaks 2>/dev/null || echo '{}')
    mine=$(jq -c --arg a "$leaky_agent" '[.leaks[]? | select(.agent == $a)]' <<<"$leaks")
    if [[ -z $t_listed && $mine != "[]" ]]; then
      t_listed=$(elapsed) listed_kind=$(jq -r '.[0].kind // "classes"' <<<"$mine") listed_id=$(jq -r '.[0].leak' <<<"$mine")
      log "heapwatchctl leaks lists leak $listed_id of kind '$listed_kind' for the leaking JVM"
    fi
    if [[ -z $t_heap_leak ]]; then
      heap_leak_id=$(jq -r '[.[] | select(.kind == "heap")][0].leak // empty' <<<"$mine")
      if [[ -n $heap_leak_id ]]; then t_heap_leak=$(elapsed); log "heap leak $heap_leak_id listed"; fi
    fi
    if [[ -z $t_named ]]; then
      named=$(jq -c --arg re "$app_class_re" '[.[] | select(((.classes // []) + [.main_class // ""])
              | any(test($re)))][0] // empty' <<<"$mine")
      if [[ -n $named ]]; then
        t_named=$(elapsed) named_id=$(jq -r .leak <<<"$named") named_main=$(jq -r .main_class <<<"$named")
        named_classes=$(jq -r '.classes | join(", ")' <<<"$named")
        log "heapwatchctl leaks names $named_main in leak $named_id (classes: $named_classes)"
      fi
    fi
    if [[ -n $healthy_agent && -z $healthy_leak_listed ]]; then
      h=$(jq -c --arg h "$healthy_agent" '[.leaks[]? | select(.agent == $h) | {leak, kind, main_class}]' <<<"$leaks")
      if [[ $h != "[]" ]]; then healthy_leak_listed="t=$(elapsed): $h"; log "note: leaks lists the healthy JVM: $h"; fi
    fi
  fi
  sleep 2
done

# ---- 5. when it died, the timeline, the verdict ---------------------------------------------------------------
read -r exit_rc exit_ms <"$tmp/exhaustion.exit"
oom_line=$(grep -m1 '^OOM ' "$tmp/$leaky_log_name" || true)
if [[ -n $oom_line ]]; then
  oom_ms=$(awk '{ print $2 }' <<<"$oom_line")
elif grep -q 'java.lang.OutOfMemoryError' "$tmp/$leaky_log_name"; then
  oom_ms=$exit_ms  # died of an OOM outside the app's handler: the exit time (at most ~0.1 s later)
else
  fail "$leaky_label exited with code $exit_rc at t=$(rel "$exit_ms") without an OutOfMemoryError"
fi
[[ $oom_ms =~ ^[0-9]+$ ]] || fail "cannot parse the OOM line '$oom_line'"
t_oom=$(rel "$oom_ms")
log "$leaky_label died: ${oom_line:-OutOfMemoryError (exit code $exit_rc)}"
alive_agent=$(jq -r '.agents[]? | select(.agent == "'"$healthy_agent"'") | .state' \
  <<<"$("${ctl[@]}" agents 2>/dev/null || echo '{}')")

# Seconds (one decimal) of a "12.3" time, as tenths.
tenths() { local s=${1#-} t; t=$((10#${s%.*} * 10 + ${s#*.})); [[ $1 == -* ]] && t=$((-t)); echo "$t"; }
# Timeline events, printed in time order, those that never happened last.
events=()
ev() { events+=("${1:-never}"$'\t'"$2"); }
ev "$(rel "$t_daemon_ms")" "heapwatchd started"
ev "$t_agents" "heapwatchd watches both JVMs"
ev "$t_growing" "heapwatchd flags the live set as growing (${growing_rate:-?} bytes/s, heapwatchctl agents)"
ev "$t_listed" "heapwatchctl leaks lists a leak of the leaking JVM (${listed_id:-}, kind ${listed_kind:-})"
ev "$t_heap_leak" "... of kind heap (${heap_leak_id:-})"
ev "$t_estimate" "heapwatch_heap_exhaustion_seconds scraped (estimate/soonest/latest ${first_estimate:-})"
ev "$t_warn_pending" "HeapwatchHeapExhaustion (warning, for: 10m) pending"
ev "$t_soon_pending" "HeapwatchHeapExhaustionSoon (critical, for: 1m) pending"
ev "$t_soon_firing" "HeapwatchHeapExhaustionSoon FIRING${soon_firing_value:+ (estimate $soon_firing_value s)}"
ev "$t_leak_alert" "a HeapwatchLeak* alert pending for the leaking JVM"
same=''  # the heap leak takes its classes' names under the same id
if [[ -n $named_id && -n $heap_leak_id ]]; then
  if [[ $named_id == "$heap_leak_id" ]]; then same=", the heap leak's id"; else same=", not the heap leak's id $heap_leak_id"; fi
fi
ev "$t_named" "heapwatchctl leaks names ${named_main:-the leaking class}${named_id:+ (leak $named_id$same)}"
ev "$t_oom" "OutOfMemoryError: $leaky_label dies"
ev "$t_healthy_bad" "leak/exhaustion alert for $healthy_label ${healthy_bad:-}"
echo
echo "timeline (seconds; t=0: $leaky_label starts $leak_what into -Xmx$heap;"
echo "          heapwatchd at its defaults: $defaults;"
echo "          Prometheus scrapes and evaluates every 15s, rules unmodified):"
printf '%s\n' "${events[@]}" | sed 's/^never\t/1e9\t/' | sort -s -t$'\t' -k1,1g | sed 's/^1e9\t/never\t/' |
  awk -F'\t' '{ printf "  %-8s %s\n", $1, $2 }'
if [[ -s $tmp/estimates.txt ]]; then
  echo "the exhaustion estimate as scraped, against the time the JVM actually had left (seconds):"
  printf '  %-8s %-9s %-9s %-9s %s\n' t estimate soonest latest "actual left"
  while read -r ms e s l; do
    printf '  %-8s %-9s %-9s %-9s %s\n' "$(rel "$ms")" "$e" "$s" "$l" $(((oom_ms - ms) / 1000))
  done <"$tmp/estimates.txt"
fi
[[ -n $healthy_leak_listed ]] && echo "note: heapwatchctl leaks listed the healthy JVM at $healthy_leak_listed"
[[ $alive_agent == up ]] || echo "note: the healthy JVM's agent is '${alive_agent:-unknown}' at the end"
echo

failures=()
[[ -n $leaky_agent && -n $healthy_agent ]] || failures+=("heapwatchd never listed both JVMs (heapwatchctl agents)")
if [[ -z $t_soon_firing ]]; then
  why="never pending"
  [[ -n $t_soon_pending ]] && why="pending from t=$t_soon_pending, never firing"
  [[ -z $t_estimate ]] && why+="; heapwatch_heap_exhaustion_seconds was never scraped for agent ${leaky_agent:-?}"
  failures+=("HeapwatchHeapExhaustionSoon did not fire for the leaking JVM before its OOM at t=$t_oom ($why)")
else
  lead=$((($(tenths "$t_oom") - $(tenths "$t_soon_firing")) / 10))
  if ((lead >= min_lead_s)); then
    echo "lead time: HeapwatchHeapExhaustionSoon fired ${lead}s before the OutOfMemoryError (t=$t_soon_firing, OOM t=$t_oom)"
  else
    failures+=("HeapwatchHeapExhaustionSoon fired only ${lead}s before the OOM (t=$t_soon_firing, OOM t=$t_oom; at least ${min_lead_s}s needed)")
  fi
fi
if [[ -n $t_named ]] && (($(tenths "$t_named") < $(tenths "$t_oom"))); then
  echo "heapwatchctl leaks named $named_main at t=$t_named, $((($(tenths "$t_oom") - $(tenths "$t_named")) / 10))s before the OOM"
else
  failures+=("heapwatchctl leaks did not name a class of $leaky_label ($app_class_re) before the OOM at t=$t_oom${t_listed:+ (it listed leak $listed_id, kind '$listed_kind', from t=$t_listed)}")
fi
[[ -z $healthy_bad ]] || failures+=("an alert names the healthy JVM's agent $healthy_agent at t=$t_healthy_bad: $healthy_bad")
if ((${#failures[@]} > 0)); then
  for f in "${failures[@]}"; do echo "FAIL: $f" >&2; done
  exit 1
fi
ok=1
echo "PASS"
