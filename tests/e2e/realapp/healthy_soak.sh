#!/usr/bin/env bash
# End to end: healthy real applications under load stay quiet at heapwatchd's shipped defaults, with the
# shipped alert rules in a real Prometheus (issue "Alert before the heap runs out": no cry wolf).
#
# What it proves: Debian's Tomcat 10 (the shop webapp of tests/e2e/realapp in its healthy mode: every session
# invalidated at the end of its request) and Debian's Jetty 9 (the product pages webapp in its healthy mode:
# an LRU cache of 1000 pages), each with a HEAP heap, under wrk for HEAPWATCH_SOAK_SECONDS, watched by
# heapwatchd with nothing but a data dir, ports and a watch filter (every other option its shipped default),
# never have a leak listed by `heapwatchctl leaks`, never have their live set flagged as growing, and never
# have a HeapwatchLeak* or HeapwatchHeapExhaustion* alert pending or firing in a Prometheus that scrapes and
# evaluates dashboards/heapwatch-alerts.yml (unmodified) every 15 s. Both servers start with the load, so
# their warm-up (class loading, JIT, the session manager and the cache filling up) is inside the soak.
#
# Usage: healthy_soak.sh HEAPWATCHD HEAPWATCHCTL RULES_YML REALAPP_DIR
#   HEAPWATCH_SOAK_SECONDS  how long the load runs (default 1800: the issue's 30 minutes; the test command
#                           runs 300)
#   HEAP                    each server's -Xmx (default 1g)
#   LOAD_CONNECTIONS, LOAD_DELAY_MS  wrk connections per server and the pause after every response (8 and 10)
#   MIN_RPS                 each server must have served at least this many requests/s on average (200)
#   HEAPWATCH_E2E_KEEP=1    keep the run's directory
# Prints every POLL_S (30 s) the servers' live set as heapwatchd reads it, their last histogram's mode and the
# pause heapwatch caused them, and at the end per server: requests/s, histograms and modes, pause share
# caused by heapwatch; PASS or FAIL with the first leak or alert seen. Every process started here is killed
# on every exit path (e2e_lib.sh).
set -euo pipefail

heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL RULES_YML REALAPP_DIR}
heapwatchctl=${2:?}
rules=$(realpath "${3:?}")
src=$(realpath "${4:?}")
soak_s=${HEAPWATCH_SOAK_SECONDS:-1800}
heap=${HEAP:-1g}
connections=${LOAD_CONNECTIONS:-8}
delay_ms=${LOAD_DELAY_MS:-10}
min_rps=${MIN_RPS:-200}
poll_s=30
bad_alert_re='^Heapwatch(Leak|HeapExhaustion)'

# shellcheck source=../e2e_lib.sh
E2E_LOG_LINES=25 source "$(dirname "$0")/../e2e_lib.sh" heapwatch-healthy-soak

for tool in java javac jar jq curl wrk prometheus promtool; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/deps.sh installs it)"
done
tomcat_api=/usr/share/tomcat10/lib/servlet-api.jar
jetty_api=/usr/share/jetty9/lib/servlet-api-3.1.jar
[[ -f $tomcat_api ]] || fail "Tomcat 10 is not installed (apt-get install tomcat10)"
[[ -f $jetty_api ]] || fail "Jetty 9 is not installed (apt-get install jetty9)"
mkdir -p "$tmp/classes-tomcat" "$tmp/classes-jetty"
javac -nowarn -d "$tmp/classes-tomcat" -cp "$tomcat_api" "$src"/tomcat/src/org/heapwatch/e2e/*.java
javac -nowarn -d "$tmp/classes-jetty" -cp "$jetty_api" "$src"/jetty/src/org/heapwatch/e2e/*.java

# ---- heapwatchd at its defaults, Prometheus with the shipped rules ------------------------------------
start_heapwatchd "$heapwatchd" "$tmp/hw" <<EOF
# Nothing but the watch filter: every other option is heapwatchd's shipped default.
watch:
  agents:
    include: ["$tmp/*.jar"]
EOF
metrics_port=$(wait_port_file "$tmp/hw/metrics.port" 30) || fail "heapwatchd wrote no metrics port"
ctl=("$heapwatchctl" --server "127.0.0.1:$grpc" --timeout 5s --json)
start_prometheus "$rules" "$metrics_port"
log "heapwatchd (defaults) on gRPC 127.0.0.1:$grpc, metrics $metrics_port; prometheus at $prom_url"

# ---- the servers, then the load --------------------------------------------------------------------------
declare -A url agent
wrk_pids=()
opts=(-Xms64m "-Xmx$heap" -XX:+UseG1GC -Djava.awt.headless=true)
tomcat_shop tomcat healthy "$src" "$tmp/classes-tomcat" "${opts[@]}"
jetty_pages jetty healthy "$src" "$tmp/classes-jetty" "${opts[@]}"
names=(tomcat jetty)
wait_http 150 'sku=1&id=1' "${names[@]}"
t_start_ms=$(date +%s%3N)
for n in "${names[@]}"; do
  params=cart; [[ $n == jetty ]] && params=page
  LOAD_PATH=/${url[$n]#http://*/} LOAD_PARAMS=$params LOAD_DELAY_MS=$delay_ms \
    wrk -t1 -c"$connections" -d"${soak_s}s" -s "$src/load.lua" "http://127.0.0.1:${port[$n]}/" \
    >"$tmp/wrk-$n.txt" 2>&1 </dev/null &
  wrk_pids+=($!)
  pids+=($!)
done
log "load started on tomcat (pid ${pid_of[tomcat]}) and jetty (pid ${pid_of[jetty]}), -Xmx$heap each:" \
  "wrk -t1 -c$connections, ${delay_ms} ms after every response, for ${soak_s}s"

# ---- watch -----------------------------------------------------------------------------------------------
first_bad=''
end_ms=$((t_start_ms + soak_s * 1000))
next_poll_ms=0
while (($(date +%s%3N) < end_ms)); do
  for n in "${names[@]}"; do
    kill -0 "${pid_of[$n]}" 2>/dev/null || fail "$n died during the soak (see $n.log)"
  done
  agents=$("${ctl[@]}" agents 2>/dev/null || echo '{}')
  for n in "${names[@]}"; do
    [[ -n ${agent[$n]:-} ]] && continue
    agent[$n]=$(jq -r --argjson p "${pid_of[$n]}" '[.agents[]? | select(.pid == $p)][0].agent // empty' <<<"$agents")
    [[ -n ${agent[$n]} ]] && log "heapwatchd watches $n: ${agent[$n]}"
  done
  for n in "${names[@]}"; do
    a=${agent[$n]:-}
    [[ -n $a ]] || continue
    growth=$(jq -r --arg a "$a" '.agents[]? | select(.agent == $a) | .live_set_growth_bytes_per_second // 0' <<<"$agents")
    if [[ -n $growth && $growth != 0 && -z $first_bad ]]; then
      first_bad="t=$(elapsed): heapwatchd flags $n's live set as growing ($growth bytes/s)"
    fi
  done
  leaks=$("${ctl[@]}" leaks 2>/dev/null || echo '{}')
  listed=$(jq -c '[.leaks[]? | {agent, leak, kind, main_class}]' <<<"$leaks")
  if [[ $listed != "[]" && -z $first_bad ]]; then first_bad="t=$(elapsed): heapwatchctl leaks lists $listed"; fi
  alerts=$(curl -sf "$prom_url/api/v1/alerts" || echo '{}')
  bad=$(jq -c --arg re "$bad_alert_re" '[.data.alerts[]? | select(.labels.alertname | test($re))
        | {alertname: .labels.alertname, agent: .labels.agent, state}]' <<<"$alerts")
  if [[ $bad != "[]" && -z $first_bad ]]; then first_bad="t=$(elapsed): alert $bad"; fi
  [[ -n $first_bad ]] && log "NOT QUIET: $first_bad" && break
  if (($(date +%s%3N) >= next_poll_ms)); then
    next_poll_ms=$(($(date +%s%3N) + poll_s * 1000))
    log "$(jq -r --arg t "${agent[tomcat]:-}" --arg j "${agent[jetty]:-}" '[.agents[]? | select(.agent == $t or .agent == $j)
          | "\(if .agent == $t then "tomcat" else "jetty" end): live set \((.live_bytes // 0) / 1048576 | floor) MiB, " +
             "last histogram \(.histogram_mode // "-"), paused \(.total_pause_seconds // 0 | . * 1000 | floor) ms"] | join("; ")' <<<"$agents")"
  fi
  sleep 5
done

# ---- report ----------------------------------------------------------------------------------------------
if [[ -z $first_bad ]]; then
  for p in "${wrk_pids[@]}"; do  # wrk prints its summary when its duration is over
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  done
fi
agents=$("${ctl[@]}" agents 2>/dev/null || echo '{}')
failures=()
echo
echo "healthy soak: ${soak_s}s of load (t=0 at its start), heapwatchd at its defaults, Prometheus every 15s with"
echo "$rules unmodified; per server:"
for n in "${names[@]}"; do
  a=${agent[$n]:-}
  [[ -n $a ]] || { failures+=("heapwatchd never watched $n"); continue; }
  row=$(jq -c --arg a "$a" '.agents[]? | select(.agent == $a)' <<<"$agents")
  modes=$("${ctl[@]}" history "$a" java.lang.String 2>/dev/null |
    jq -r '[.points[]? | .mode // "?"] | group_by(.) | map("\(.[0]) \(length)") | join(", ")' || echo '?')
  rps=$(awk '/^Requests\/sec:/ { print $2 }' "$tmp/wrk-$n.txt" 2>/dev/null || true)
  errors=$(grep -E 'Socket errors|Non-2xx' "$tmp/wrk-$n.txt" 2>/dev/null | tr -s ' ' | paste -sd';' || true)
  echo "  $n ($a): ${rps:-?} requests/s${errors:+ ($errors)}; histograms: ${modes:-none};" \
    "$(jq -r '"total pause \(.total_pause_seconds // 0)s (\((.paused_fraction // 0) * 100 | tostring | .[0:6]) % of its life), live set \((.live_bytes // 0) / 1048576 | floor) MiB"' <<<"$row")"
  if [[ -n $rps ]] && awk -v r="$rps" -v m="$min_rps" 'BEGIN { exit !(r < m) }'; then
    failures+=("$n served only $rps requests/s (at least $min_rps wanted)")
  fi
done
[[ -z $first_bad ]] || failures+=("not quiet: $first_bad")
if ((${#failures[@]} > 0)); then
  for f in "${failures[@]}"; do echo "FAIL: $f" >&2; done
  exit 1
fi
ok=1
echo "PASS: no leak, no growing live set, no leak or exhaustion alert for ${soak_s}s"
