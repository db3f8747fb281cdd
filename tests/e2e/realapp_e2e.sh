#!/usr/bin/env bash
# End to end: heapwatch catches leaks in real server applications installed from Debian packages, under
# real HTTP load, and stays quiet on the same applications when they are healthy (issue "Leaks, not classes").
#
# Usage: realapp_e2e.sh HEAPWATCHD HEAPWATCHCTL REALAPP_DIR [APPS]
#   REALAPP_DIR is tests/e2e/realapp (webapp sources, web.xml templates, load.lua); APPS is "tomcat jetty"
#   (default), "tomcat" or "jetty". Needs the Debian packages tomcat10, jetty9, wrk, openjdk-17-jdk-headless,
#   jq, curl (scripts/deps.sh); run as root (it copies /etc/tomcat10, readable by root and group tomcat).
#
# The servers and their webapps (sources in REALAPP_DIR, compiled here with javac against the servlet API jar
# of the Debian package):
#   tomcat  Tomcat 10 (tomcat10, jakarta.servlet). GET /shop/cart?sku=N puts an item into the visitor's
#           org.heapwatch.e2e.ShoppingCart, kept in the HTTP session; the load keeps no cookies, so every
#           request is a new visitor. Leak: session-timeout -1 in web.xml (sessions never expire). Healthy:
#           the session is invalidated at the end of each request.
#   jetty   Jetty 9 (jetty9, javax.servlet). GET /pages/product?id=N&utm_...&_=unique renders a product
#           page, an org.heapwatch.e2e.RenderedPage, cached under the request URL. Leak: a static map
#           without eviction. Healthy: an LRU map bounded to 1000 pages (filled within a few seconds).
# Each app runs twice at once, leaky and healthy (two server JVMs per app, -Xmx256m; ctest runs one app per
# test, e2e.RealAppTomcat and e2e.RealAppJetty), each with its own CATALINA_BASE /
# JETTY_BASE under this run's temporary directory, HTTP on a free loopback port, started directly with
# `java -jar <base>/<server>.jar` (a launcher jar whose manifest names the server's own main class and jars:
# org.apache.catalina.startup.Bootstrap, org.eclipse.jetty.start.Main), never through the system services.
# The launcher jar's path is the JVM's main class as heapwatchd sees it, so the daemon's
# watch.agents.include pattern "<tmp>/*.jar" matches this run's JVMs only (as in tests/e2e/CMakeLists.txt).
#
# heapwatchd: collection.interval 2s, pause_budget 1 (histograms are never stretched by the budget),
# escalation disabled (an extended dump is not what this test measures and would pause the leaky JVMs for
# seconds on this 2-core machine), trend detector with its defaults (no trend: section). The load starts only
# once every agent has WARMUP_SNAPSHOTS + BASELINE_SNAPSHOTS histograms, so the servers' start-up is
# inside the detector's warm-up and the leak's level before the load is measured.
#
# Load: one wrk per server (Debian's wrk, 1 thread, LOAD_CONNECTIONS connections, each pausing
# LOAD_DELAY_MS after every response: about 250 requests/s), the same for the leaky and the healthy run. At
# that rate the leaky heaps grow by about 150-200 KiB/s (Jetty, Tomcat) of which the app's class is about
# 55 KiB/s (one ShoppingCart or RenderedPage of 232 bytes per request); the test fails if wrk ran slower
# than MIN_RPS or saw errors. The class itself must grow: the detector works on shallow bytes per class, and a
# leak is named by its non-JDK class holding the most bytes (hence 232-byte objects, more than Tomcat's
# StandardSession of 88). Measured on 2026-11-24: at 130 requests/s (class 29 KiB/s, under 1 MiB per
# 12-snapshot window) the per-class TrendDetector of main never flagged the class within 150 s, while the
# LeakDetector daemon (a build of branch leaks-daemon, bucketed time scales) flagged it, first_seen at most
# 1 snapshot after the growth became significant.
#
# Assertions (numbers printed):
#   leaky   within LEAK_LIMIT_S of the load's start, the app's class is flagged: with `heapwatchctl leaks`
#           (if this build has it) exactly one leak for the agent, main_class == the class and the class in
#           its classes, and still exactly one leak named so at the end of the load; otherwise (`suspects`)
#           the class is a suspect (other classes may be suspects too). Detection delay: from `heapwatchctl
#           history AGENT CLASS`, the first snapshot where the class's bytes exceed its level at the start of
#           the load by G = max(1 MiB, 10% of that level) ("growth became significant"), counted in snapshots
#           to first_seen: at most 10 (also printed: the count up to the poll that saw it, an upper bound).
#   healthy `heapwatchctl suspects --json` has nothing for the agent at every poll (every POLL_S) from the
#           start of the load until the leaky runs were flagged plus HEALTHY_MARGIN_S, and at least
#           HEALTHY_MIN_S.
# With AGENT=/path/libheapwatch_agent.so (docs/agent.md) every server JVM runs heapwatch's in-process agent,
# registered with the daemon over a UNIX socket (agents.listen): the same assertions then hold for histograms
# the agent takes and delivers, and each agent must be listed with kind "registered" (never collected through
# the attach socket as well). Not part of the test command (it doubles the real-application time); run by hand:
#   AGENT=build/agent/libheapwatch_agent.so bash tests/e2e/realapp_e2e.sh build/daemon/heapwatchd \
#     build/ctl/heapwatchctl tests/e2e/realapp tomcat
# Every process started here is killed on every exit path (e2e_lib.sh); every wait is bounded by a
# deadline, so the whole run takes at most about 6 minutes.
set -euo pipefail

heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL REALAPP_DIR [APPS]}
heapwatchctl=${2:?}
src=${3:?}
apps=${4:-tomcat jetty}
interval_s=2
warmup_snapshots=5            # the trend detector's default (trend.warmup_snapshots)
baseline_snapshots=3          # histograms after warm-up before the load starts
max_snapshot_delay=10         # the issue's bound: flagged within 10 snapshots of significant growth
LOAD_CONNECTIONS=${LOAD_CONNECTIONS:-8}   # 8 connections pausing 30 ms: about 250 requests/s per server,
LOAD_DELAY_MS=${LOAD_DELAY_MS:-30}       # and the rate depends little on the server's latency
LEAK_LIMIT_S=${LEAK_LIMIT_S:-150}
HEALTHY_MIN_S=${HEALTHY_MIN_S:-80}
HEALTHY_MARGIN_S=${HEALTHY_MARGIN_S:-20}
POLL_S=${POLL_S:-3}
AGENT=${AGENT:-}
MIN_RPS=${MIN_RPS:-200}       # the load this test is about: "a few hundred requests/s"
HEAP=${HEAP:-256m}

# shellcheck source=e2e_lib.sh
E2E_LOG_LINES=25 source "$(dirname "$0")/e2e_lib.sh" heapwatch-realapp-e2e

for tool in java javac jar jq curl wrk; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/deps.sh installs it)"
done
TOMCAT_HOME=/usr/share/tomcat10
JETTY_HOME=/usr/share/jetty9
TOMCAT_SERVLET_API=$TOMCAT_HOME/lib/servlet-api.jar   # jakarta.servlet 6 (tomcat10 package)
JETTY_SERVLET_API=$JETTY_HOME/lib/servlet-api-3.1.jar # javax.servlet 3.1 (jetty9 package)
for app in $apps; do
  case $app in
    tomcat) [[ -f $TOMCAT_SERVLET_API && -f $TOMCAT_HOME/bin/bootstrap.jar ]] ||
              fail "Tomcat 10 is not installed (apt-get install tomcat10)" ;;
    jetty) [[ -f $JETTY_SERVLET_API && -f $JETTY_HOME/start.jar ]] ||
             fail "Jetty 9 is not installed (apt-get install jetty9)" ;;
    *) fail "unknown app $app (tomcat or jetty)" ;;
  esac
done
log "$(java -version 2>&1 | head -1); tomcat10 $(dpkg-query -W -f='${Version}' tomcat10 2>/dev/null || echo -);" \
  "jetty9 $(dpkg-query -W -f='${Version}' jetty9 2>/dev/null || echo -); $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2);" \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the webapps -----------------------------------------------------------------------------------------
if [[ " $apps " == *" tomcat "* ]]; then
  mkdir -p "$tmp/classes-tomcat"
  javac -nowarn -d "$tmp/classes-tomcat" -cp "$TOMCAT_SERVLET_API" "$src"/tomcat/src/org/heapwatch/e2e/*.java
fi
if [[ " $apps " == *" jetty "* ]]; then
  mkdir -p "$tmp/classes-jetty"
  javac -nowarn -d "$tmp/classes-jetty" -cp "$JETTY_SERVLET_API" "$src"/jetty/src/org/heapwatch/e2e/*.java
fi

JVM_OPTS=(-Xms64m "-Xmx$HEAP" -XX:+UseG1GC -Djava.awt.headless=true)
agents_yaml=
want_kind=attach
if [[ -n $AGENT ]]; then
  mkdir -m 700 "$tmp/run"
  JVM_OPTS+=("-agentpath:$(realpath "$AGENT")=address=unix:$tmp/run/agent.sock")
  agents_yaml="agents:
  listen: unix:$tmp/run/agent.sock"
  want_kind=registered
fi
declare -A url leak_class  # port and pid_of: e2e_lib.sh
# start_tomcat NAME MODE: the shop webapp on Tomcat 10 (e2e_lib.sh, tomcat_shop).
start_tomcat() {
  tomcat_shop "$1" "$2" "$src" "$tmp/classes-tomcat" "${JVM_OPTS[@]}"
  leak_class[$1]=org.heapwatch.e2e.ShoppingCart
}
# start_jetty NAME MODE: the product pages webapp on Jetty 9 (e2e_lib.sh, jetty_pages).
start_jetty() {
  jetty_pages "$1" "$2" "$src" "$tmp/classes-jetty" "${JVM_OPTS[@]}"
  leak_class[$1]=org.heapwatch.e2e.RenderedPage
}

# ---- heapwatchd ------------------------------------------------------------------------------------------
start_heapwatchd "$heapwatchd" "$tmp/hw" <<EOF
watch:
  agents:
    include: ["$tmp/*.jar"]
collection:
  interval: ${interval_s}s
  pause_budget: 1
  discovery_interval: 1s
escalation:
  enabled: false
$agents_yaml
EOF
ctl() { "$heapwatchctl" --server "127.0.0.1:$grpc" "$@"; }

# ---- the servers -----------------------------------------------------------------------------------------
names=()
for app in $apps; do
  for mode in leak healthy; do
    "start_$app" "$app-$mode" "$mode"
    names+=("$app-$mode")
  done
done
log "heapwatchd on 127.0.0.1:$grpc; started ${names[*]} (JVM pids: $(for n in "${names[@]}"; do printf '%s ' "${pid_of[$n]}"; done))"

deadline=$(($(date +%s) + 150))  # for the servers, their agents and their histograms together
declare -A agent
wait_http 150 'sku=1&id=1' "${names[@]}"
log "every server answers: $(for n in "${names[@]}"; do printf '%s:%s ' "$n" "${port[$n]}"; done)"
for n in "${names[@]}"; do
  jar_path=$tmp/$n/$([[ $n == tomcat-* ]] && echo tomcat.jar || echo jetty.jar)
  until [[ -n ${agent[$n]:-} ]]; do
    agent[$n]=$(ctl --json agents | jq -r --arg m "$jar_path" --argjson p "${pid_of[$n]}" \
      --arg k "$want_kind" '.agents[] | select(.state == "up" and .main_class == $m and (.pid | tonumber) == $p
        and ((.kind // "attach") == $k)) | .agent' | head -1)
    [[ -n ${agent[$n]} ]] && break
    (($(date +%s) < deadline)) || fail "heapwatchd does not watch $n ($jar_path) within 150 s"
    sleep 1
  done
done
others=$(ctl --json agents | jq -r --arg t "$tmp/" '[.agents[] | select(.main_class | startswith($t) | not)] | length')
[[ $others == 0 ]] || fail "heapwatchd watches $others JVM(s) that are not this test's"

# Histograms stored per agent (the history of java.lang.String: every snapshot has Strings).
snapshots() { ctl --json history "$1" java.lang.String 2>/dev/null | jq '.points | length' || echo 0; }
need=$((warmup_snapshots + baseline_snapshots))
for n in "${names[@]}"; do
  until (($(snapshots "${agent[$n]}") >= need)); do
    (($(date +%s) < deadline)) || fail "$n (${agent[$n]}) has fewer than $need histograms after 150 s"
    sleep 1
  done
done
log "every agent has >= $need histograms: $(for n in "${names[@]}"; do printf '%s=%s ' "$n" "${agent[$n]}"; done)"

# ---- load ------------------------------------------------------------------------------------------------
load_s=$((LEAK_LIMIT_S + HEALTHY_MARGIN_S + 30))
declare -A wrk_pid
load_start=$(date +%s.%N)
for n in "${names[@]}"; do
  params=cart; [[ $n == jetty-* ]] && params=page
  LOAD_PATH=/${url[$n]#http://*/} LOAD_PARAMS=$params LOAD_DELAY_MS=$LOAD_DELAY_MS \
    wrk -t1 -c"$LOAD_CONNECTIONS" -d"${load_s}s" -s "$src/load.lua" "http://127.0.0.1:${port[$n]}/" \
    >"$tmp/wrk-$n.txt" 2>&1 </dev/null &
  wrk_pid[$n]=$!
  pids+=("${wrk_pid[$n]}")
done
log "load started: wrk -t1 -c$LOAD_CONNECTIONS, ${LOAD_DELAY_MS} ms between requests per connection, on every server"

# ---- findings: one function to switch from suspects to leaks -----------------------------------------
# Prints one JSON array of findings {agent, main_class, classes, first_seen, bytes, growth, score} for every
# agent: the leaks of `heapwatchctl leaks --json` if this build has that command, else one finding per
# suspect class (`suspects --json`), so that "exactly one leak" can only be checked with leaks.
ctl_help=$("$heapwatchctl" --help 2>&1 || true)
if grep -qE '^[[:space:]]+leaks([[:space:]]|$)' <<<"$ctl_help"; then findings_source=leaks; else findings_source=suspects; fi
findings() {
  if [[ $findings_source == leaks ]]; then
    ctl --json leaks | jq -c '[.leaks[]? | {agent, main_class, classes: [.classes[]? | if type == "object" then .class else . end],
      first_seen, bytes: (.bytes | tonumber), growth: (.growth_bytes_per_second | tonumber), score}]'
  else
    ctl --json suspects | jq -c '[.suspects[]? | {agent, main_class: .class, classes: [.class], first_seen,
      bytes: (.bytes | tonumber), growth: (.growth_bytes_per_second | tonumber), score}]'
  fi
}
log "findings from heapwatchctl $findings_source"

# RFC 3339 (UTC, "Z") to seconds since the epoch, with fractions.
JQ_TS='def ts: if test("Z$") then (sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) + ((capture("\\.(?<f>[0-9]+)Z$") | "0." + .f | tonumber) // 0) else error("not UTC: \(.)") end;'

# ---- poll: leaky runs until flagged, healthy runs at every poll -------------------------------------------
declare -A found detect_s healthy_polls healthy_bad
leaky=() healthy=()
for n in "${names[@]}"; do
  if [[ $n == *-leak ]]; then leaky+=("$n"); else healthy+=("$n"); healthy_polls[$n]=0; healthy_bad[$n]=0; fi
done
poll_log=$tmp/polls.txt
while :; do
  now=$(date +%s.%N)
  since=$(awk -v a="$now" -v b="$load_start" 'BEGIN { printf "%.1f", a - b }')
  all=$(findings)
  sus=$(ctl --json suspects)
  for n in "${leaky[@]}"; do
    [[ -n ${found[$n]:-} ]] && continue
    mine=$(jq -c --arg a "${agent[$n]}" '[.[] | select(.agent == $a)]' <<<"$all")
    if jq -e --arg c "${leak_class[$n]}" 'any(.[]; .main_class == $c or (.classes | index($c)))' <<<"$mine" >/dev/null; then
      found[$n]=$mine
      detect_s[$n]=$since
      log "$n: flagged ${since} s after the load started: $(jq -c '[.[] | {main_class, classes, first_seen, growth}]' <<<"$mine")"
    fi
  done
  for n in "${healthy[@]}"; do
    c=$(jq --arg a "${agent[$n]}" '[.suspects[]? | select(.agent == $a)] | length' <<<"$sus")
    healthy_polls[$n]=$((healthy_polls[$n] + 1))
    if ((c > 0)); then
      healthy_bad[$n]=$((healthy_bad[$n] + 1))
      log "$n: $c suspect(s) at ${since} s: $(jq -c --arg a "${agent[$n]}" '[.suspects[] | select(.agent == $a) | {class, bytes, growth_bytes_per_second, first_seen}]' <<<"$sus")"
    fi
  done
  echo "$since $(jq -c '[.[] | {agent, main_class, n: (.classes | length)}]' <<<"$all")" >>"$poll_log"
  # Done when every leaky run was flagged and the healthy runs were watched long enough.
  need_s=$HEALTHY_MIN_S
  all_found=1
  for n in "${leaky[@]}"; do
    if [[ -z ${found[$n]:-} ]]; then all_found=0; else
      need_s=$(awk -v a="$need_s" -v b="${detect_s[$n]}" -v m="$HEALTHY_MARGIN_S" 'BEGIN { print (b + m > a ? b + m : a) }')
    fi
  done
  if ((all_found)) && awk -v s="$since" -v n="$need_s" 'BEGIN { exit !(s >= n) }'; then break; fi
  if ((!all_found)) && awk -v s="$since" -v l="$LEAK_LIMIT_S" 'BEGIN { exit !(s >= l) }'; then break; fi
  for n in "${names[@]}"; do
    kill -0 "${pid_of[$n]}" 2>/dev/null || fail "$n exited during the load; see $n.log"
  done
  sleep "$POLL_S"
done
load_end=$(date +%s.%N)
# SIGINT: wrk stops and prints its summary. Bounded: after 10 s the cleanup's SIGTERM/SIGKILL will do.
for n in "${names[@]}"; do kill -INT "${wrk_pid[$n]}" 2>/dev/null || true; done
for n in "${names[@]}"; do
  for _ in $(seq 100); do
    kill -0 "${wrk_pid[$n]}" 2>/dev/null || break
    # An exited child stays a zombie (kill -0 succeeds) until it is waited for.
    if [[ $(awk '{ print $3 }' "/proc/${wrk_pid[$n]}/stat" 2>/dev/null) == Z ]]; then wait "${wrk_pid[$n]}" || true; break; fi
    sleep 0.1
  done
done
load_len=$(awk -v a="$load_end" -v b="$load_start" 'BEGIN { printf "%.0f", a - b }')

# ---- numbers and verdicts ----------------------------------------------------------------------------------
failures=()
final_all=$(findings)   # the findings at the end of the load (leaks: still one leak per leaky agent?)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%S.%NZ; }
for n in "${names[@]}"; do
  # The load really ran: wrk's rate, and no errors (a healthy run without load would prove nothing).
  rps=$(grep -oE 'Requests/sec:[[:space:]]+[0-9.]+' "$tmp/wrk-$n.txt" | awk '{print $2}' || true)
  errs=$(grep -E 'Non-2xx|Socket errors' "$tmp/wrk-$n.txt" | tr -s ' ' | paste -sd' ' || true)
  [[ -n $rps ]] || { failures+=("$n: no wrk summary (wrk-$n.txt)"); rps=0; }
  awk -v r="$rps" -v m="$MIN_RPS" 'BEGIN { exit !(r >= m) }' ||
    failures+=("$n: the load ran at $rps requests/s, less than $MIN_RPS")
  [[ -z $errs ]] || failures+=("$n: wrk saw errors: $errs")
  total=$(ctl --json diff "${agent[$n]}" --from "$(iso "$load_start")" --to now |
    jq -r --argjson s "$load_len" '"\((.total_delta_bytes | tonumber) / 1024 | floor) KiB in the histograms from \(.from) to \(.to) (\((.total_delta_bytes | tonumber) / $s / 1024 | floor) KiB/s)"')
  # The app's class: its level at the load's start, its maximum and its last value (healthy: a plateau).
  # (NOT_FOUND when no histogram ever had one: the healthy shop's carts only live during their request.)
  cls=$({ ctl --json history "${agent[$n]}" "${leak_class[$n]}" 2>/dev/null || echo '{"points": []}'; } |
    jq -r --argjson t0 "$load_start" "$JQ_TS"'
    [.points[] | {t: (.time | ts), b: (.bytes | tonumber), i: (.instances | tonumber)}] as $p
    | if ($p | length) == 0 then "in no histogram" else
      "\([$p[] | select(.t <= $t0) | .b] | last // 0) B at the load start, max \([$p[].b] | max) B, last \($p[-1].b) B (\($p[-1].i) instances)" end')
  log "$n: ${rps} requests/s over ${load_len} s${errs:+ ($errs)}; heap: $total; ${leak_class[$n]}: $cls"
  echo "RESULT $n requests_per_second=$rps load_seconds=$load_len"
done

for n in "${leaky[@]}"; do
  c=${leak_class[$n]}
  if [[ -z ${found[$n]:-} ]]; then
    h=$({ ctl --json history "${agent[$n]}" "$c" 2>/dev/null || echo '{"points": []}'; } |
      jq -c '[.points[] | .bytes | tonumber] | .[-12:]')
    failures+=("$n: $c not flagged within ${LEAK_LIMIT_S} s of load (findings: $(jq -c --arg a "${agent[$n]}" '[.[] | select(.agent == $a)]' <<<"$all"); last bytes $h)")
    continue
  fi
  if [[ $findings_source == leaks ]]; then
    k=$(jq length <<<"${found[$n]}")
    ((k == 1)) || failures+=("$n: $k leaks for the agent, expected exactly one: ${found[$n]}")
    jq -e --arg c "$c" '.[0].main_class == $c and (.[0].classes | index($c))' <<<"${found[$n]}" >/dev/null ||
      failures+=("$n: the leak's main_class is $(jq -r '.[0].main_class' <<<"${found[$n]}"), expected $c (classes $(jq -c '.[0].classes' <<<"${found[$n]}"))")
  fi
  if [[ $findings_source == leaks ]]; then
    fin=$(jq -c --arg a "${agent[$n]}" '[.[] | select(.agent == $a)]' <<<"$final_all")
    jq -e --arg c "$c" 'length == 1 and .[0].main_class == $c' <<<"$fin" >/dev/null ||
      failures+=("$n: at the end of the load the agent's leaks are $fin, expected exactly one named $c")
  fi
  first_seen=$(jq -r --arg c "$c" '[.[] | select(.main_class == $c or (.classes | index($c)))][0].first_seen' <<<"${found[$n]}")
  ctl --json history "${agent[$n]}" "$c" >"$tmp/history-$n.json"
  # One line: level at load start, G, index/time of significant growth, index/time of first_seen.
  # i_poll: the last snapshot before the poll that saw the finding, an upper bound of the detection snapshot
  # (first_seen of a finding flagged on a bucketed time scale of the LeakDetector is the bucket's middle).
  read -r level g i_sig t_sig i_det t_det i_poll <<<"$(jq -r --argjson t0 "$load_start" --arg fs "$first_seen" \
    --argjson seen "${detect_s[$n]}" "$JQ_TS"'
    [.points[] | {t: (.time | ts), b: (.bytes | tonumber)}] as $p
    | ([$p[] | select(.t <= $t0) | .b] | last // 0) as $level
    | ([1048576, 0.1 * $level] | max) as $g
    | ($fs | ts) as $tfs
    | ([range(0; $p | length) | select($p[.].t > $t0 and $p[.].b > $level + $g)] | first // -1) as $isig
    | ([range(0; $p | length) | select($p[.].t >= $tfs - 0.001)] | first // -1) as $idet
    | ([range(0; $p | length) | select($p[.].t <= $t0 + $seen)] | last // -1) as $ipoll
    | "\($level) \($g) \($isig) \(if $isig >= 0 then $p[$isig].t else 0 end) \($idet) \(if $idet >= 0 then $p[$idet].t else 0 end) \($ipoll)"' \
    "$tmp/history-$n.json")"
  ((i_sig >= 0)) || { failures+=("$n: $c never grew by G = $g bytes over its level $level in history"); continue; }
  ((i_det >= 0)) || { failures+=("$n: first_seen $first_seen is not a snapshot of history"); continue; }
  read -r delay_snap delay_s det_after_load sig_after_load <<<"$(awk -v is="$i_sig" -v id="$i_det" -v ts="$t_sig" \
    -v td="$t_det" -v t0="$load_start" 'BEGIN { printf "%d %.1f %.1f %.1f", id - is, td - ts, td - t0, ts - t0 }')"
  grow=$(jq -r --argjson i "$i_det" --argjson l "$level" --argjson td "$t_det" --argjson t0 "$load_start" \
    '(.points[$i].bytes | tonumber) as $b | "\((($b - $l) / ($td - $t0) / 1024) | floor) KiB/s"' "$tmp/history-$n.json")
  log "$n: $c level at load start $level B, G = $g B; significant at snapshot $i_sig (+${sig_after_load} s after the load started)," \
    "first_seen $first_seen = snapshot $i_det (+${det_after_load} s): delay $delay_snap snapshots, $delay_s s" \
    "(seen by the poll at +${detect_s[$n]} s: at most $((i_poll - i_sig)) snapshots); $c grew $grow until then"
  echo "RESULT $n class=$c delay_snapshots=$delay_snap delay_seconds=$delay_s flagged_after_load_s=$det_after_load" \
    "poll_delay_snapshots_max=$((i_poll - i_sig)) class_growth=${grow// /} findings=$(jq -c 'length' <<<"${found[$n]}")"
  ((delay_snap <= max_snapshot_delay)) ||
    failures+=("$n: flagged $delay_snap snapshots ($delay_s s) after its growth became significant, more than $max_snapshot_delay")
done

for n in "${healthy[@]}"; do
  echo "RESULT $n polls=${healthy_polls[$n]} polls_with_suspects=${healthy_bad[$n]} watched_under_load_s=$load_len"
  ((healthy_polls[$n] > 0)) || failures+=("$n: never polled")
  ((healthy_bad[$n] == 0)) || failures+=("$n: suspects at ${healthy_bad[$n]} of ${healthy_polls[$n]} polls (healthy run)")
  awk -v s="$load_len" -v m="$HEALTHY_MIN_S" 'BEGIN { exit !(s >= m) }' ||
    failures+=("$n: watched under load for only $load_len s (< $HEALTHY_MIN_S s)")
done

if ((${#failures[@]})); then
  for f in "${failures[@]}"; do echo "FAIL: $f" >&2; done
  exit 1
fi
ok=1
log "PASS: real apps ($apps): leaks flagged within $max_snapshot_delay snapshots of significant growth, healthy runs quiet"
