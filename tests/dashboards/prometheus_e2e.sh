#!/usr/bin/env bash
# End to end: a real Prometheus (Debian's `prometheus`) scrapes a real heapwatchd that watches a leaking JVM
# and a healthy one, evaluates the shipped alert rules, and the leak alert for the leaking class fires.
#
# Usage: prometheus_e2e.sh HEAPWATCHD HEAPWATCHCTL RULES_YML DASHBOARD_JSON JAVA_SRC_DIR
#   JAVA_SRC_DIR holds LeakyApp.java, HealthyApp.java and TestSupport.java (tests/e2e/java).
#
# Steps:
#  1. compile the two Java programs into jars; start heapwatchd on a temporary data dir with ephemeral ports (learned
#     from --grpc-port-file / --metrics-port-file), a 1 s collection interval, watching only these two jars
#     (so that other JVMs on the machine are never attached to), and start both JVMs;
#  2. copy the shipped rules with one documented substitution: every `for: <duration>` line becomes
#     `for: $HEAPWATCH_E2E_FOR` (default 10s). Expressions, labels and annotations are the shipped ones;
#  3. start Prometheus on 127.0.0.1:<free port> with scrape_interval and evaluation_interval 1s, the
#     rules copy and a temporary TSDB;
#  4. poll /api/v1/alerts every second until HeapwatchLeak is firing for agent=<LeakyApp's agent> and a
#     leak whose main class (in the summary) is LeakyApp$Leak, at least HEAPWATCH_E2E_MIN_OBSERVE seconds (default 45) have passed, and
#     HealthyApp's cache fill (requested once the trend detector has evaluated the JVM, i.e. after
#     warm-up + min_snapshots snapshots) has passed through two detector windows, within
#     HEAPWATCH_E2E_TIMEOUT seconds (default 120). Fails at once if a leak alert (pending or firing) ever
#     names HealthyApp's agent, or HeapwatchAgentDown / HeapwatchCollectionsFailing fires for either JVM;
#  5. checks the firing alert: held at least the substituted `for`, description filled from real series
#     (main class, a humanized growth rate); heapwatchctl suspects --json names the same agent and class;
#     every PromQL query of the Grafana dashboard runs on this Prometheus, and the main panels return data;
#  6. the healthy JVM was clean for the detector's statistical tests, not for its size gate: replaying the
#     gate on the stored history (`heapwatchctl history --json`), HealthyApp's cache (empty until the first
#     evaluation) and its sawtooth varied by at least trend.min_growth_bytes within the detector's windows.
# Every process started here is killed on every exit path (trap). Prints the measured timeline.
set -euo pipefail

heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL RULES_YML DASHBOARD_JSON JAVA_SRC_DIR}
heapwatchctl=${2:?}
rules=${3:?}
dashboard=${4:?}
java_src=${5:?}
for_override=${HEAPWATCH_E2E_FOR:-10s}
timeout_s=${HEAPWATCH_E2E_TIMEOUT:-120}
min_observe_s=${HEAPWATCH_E2E_MIN_OBSERVE:-45}
leak_class='LeakyApp$Leak'

# shellcheck source=../e2e/e2e_lib.sh
source "$(dirname "$0")/../e2e/e2e_lib.sh" heapwatch-prom-e2e

# A TCP port on 127.0.0.1 that nothing listens on right now (Prometheus cannot report an ephemeral port;
# a lost race is retried below).
free_port() {
  local port
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return 0; fi
  done
  return 1
}

# ---- 1. JVMs and heapwatchd -------------------------------------------------------------------------
mkdir -p "$tmp/classes" "$tmp/data"
javac -d "$tmp/classes" "$java_src/LeakyApp.java" "$java_src/HealthyApp.java" "$java_src/TestSupport.java"
# Each program runs from a jar in this run's directory, so its main class as heapwatchd sees it (the jar's
# path) is unique to this run: the daemon's watch filter then ignores every other JVM on the machine,
# including other tests' LeakyApp and HealthyApp.
for app in LeakyApp HealthyApp; do
  jar --create --file "$tmp/$app.jar" --main-class "$app" -C "$tmp/classes" .
done

cat >"$tmp/heapwatchd.yml" <<EOF
# Only the test's own JVMs (their main class is a jar under $tmp): other JVMs are never attached to.
watch:
  agents:
    include: ["$tmp/*.jar"]
collection:
  discovery_interval: 1s
  # These tests are about detection at one histogram a second; the budget's own tests are
  # tests/e2e/cost_e2e.sh and pause_budget_test. 1 = no budget limit.
  pause_budget: 1
retention:
  check_interval: 5s
EOF
t_start_ms=$(date +%s%3N)  # the timeline counts from heapwatchd's start
"$heapwatchd" --config "$tmp/heapwatchd.yml" --data-dir "$tmp/data" \
  --grpc-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
  --grpc-port-file "$tmp/grpc.port" --metrics-port-file "$tmp/metrics.port" \
  --interval 1s >"$tmp/heapwatchd.log" 2>&1 &
pids+=($!)
metrics_port=$(wait_port_file "$tmp/metrics.port" 30) || fail "heapwatchd wrote no metrics port"
grpc_port=$(wait_port_file "$tmp/grpc.port" 30) || fail "heapwatchd wrote no gRPC port"
log "heapwatchd up: metrics 127.0.0.1:$metrics_port, gRPC 127.0.0.1:$grpc_port"

# The trend detector's options as this heapwatchd runs them (the configuration has no trend: section).
trend_option() {
  "$heapwatchd" --config "$tmp/heapwatchd.yml" --print-config |
    awk -v key="$1:" '/^trend:/ { t = 1; next } /^[^ ]/ { t = 0 } t && $1 == key { print $2 }'
}
window=$(trend_option window_snapshots)
min_snapshots=$(trend_option min_snapshots)
warmup_snapshots=$(trend_option warmup_snapshots)
min_growth=$(trend_option min_growth_bytes)
for v in "$window" "$min_snapshots" "$warmup_snapshots" "$min_growth"; do
  [[ $v =~ ^[0-9]+$ ]] || fail "cannot read the trend options from heapwatchd --print-config"
done
[[ $(trend_option warmup) =~ ^0s?$ ]] || fail "trend.warmup is not 0: the size-gate replay below assumes it"
# HealthyApp's cache fills once its history has this many snapshots: after the detector's first evaluation.
fill_after=$((warmup_snapshots + min_snapshots + 1))

java -Xmx256m -jar "$tmp/LeakyApp.jar" --max-seconds $((timeout_s + 120)) >"$tmp/leaky.log" 2>&1 &
leaky_pid=$!
pids+=("$leaky_pid")
java -Xmx256m -jar "$tmp/HealthyApp.jar" --fill-cache-when "$tmp/fill-cache" --max-seconds $((timeout_s + 120)) \
  >"$tmp/healthy.log" 2>&1 &
healthy_pid=$!
pids+=("$healthy_pid")
log "LeakyApp pid $leaky_pid, HealthyApp pid $healthy_pid"

# ---- 2. the shipped rules, with the documented `for:` substitution ---------------------------------------
sed -E "s/^([[:space:]]*for:[[:space:]]*)[0-9]+[smhdwy]+[[:space:]]*\$/\1$for_override/" "$rules" \
  >"$tmp/rules.yml"
n_for=$(grep -cE '^[[:space:]]*for:' "$rules")
n_subst=$(grep -cE "^[[:space:]]*for:[[:space:]]*$for_override\$" "$tmp/rules.yml")
((n_for > 0 && n_subst == n_for)) || fail "the for: substitution changed $n_subst of $n_for lines"
# Nothing but the `for:` lines differs from the shipped file.
diff <(grep -vE '^[[:space:]]*for:' "$rules") <(grep -vE '^[[:space:]]*for:' "$tmp/rules.yml") >/dev/null ||
  fail "the rules copy differs from the shipped rules beyond the for: lines"
log "rules: $n_subst 'for:' durations set to $for_override"

# ---- 3. Prometheus -----------------------------------------------------------------------------------
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $tmp/rules.yml
scrape_configs:
  - job_name: heapwatch
    static_configs:
      - targets: ['127.0.0.1:$metrics_port']
EOF
promtool check config "$tmp/prometheus.yml" >/dev/null
prom_url=
for attempt in 1 2 3 4 5; do
  prom_port=$(free_port) || fail "no free port"
  prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
  prom_pid=$!
  for _ in $(seq 100); do
    if curl -sf "http://127.0.0.1:$prom_port/-/ready" >/dev/null 2>&1; then prom_url="http://127.0.0.1:$prom_port"; break; fi
    kill -0 "$prom_pid" 2>/dev/null || break
    sleep 0.2
  done
  if [[ -n $prom_url ]]; then pids+=("$prom_pid"); break; fi
  kill "$prom_pid" 2>/dev/null || true
  wait "$prom_pid" 2>/dev/null || true
  log "prometheus attempt $attempt on port $prom_port failed, retrying"
done
[[ -n $prom_url ]] || fail "prometheus did not start"
log "prometheus ready at $prom_url"

# PromQL instant query; prints the API's JSON.
query() { curl -sfG "$prom_url/api/v1/query" --data-urlencode "query=$1"; }

# Number of stored snapshots of the healthy JVM (java.lang.String is in every histogram).
healthy_snapshots() {
  "$heapwatchctl" --server "127.0.0.1:$grpc_port" history "$healthy_agent" java.lang.String --json 2>/dev/null |
    jq '.points | length' || echo 0
}

# ---- 4. poll the alerts --------------------------------------------------------------------------------
leaky_agent= healthy_agent= t_agents= t_suspect= t_pending= t_firing= firing_alert= fill_at= t_fill= n_healthy=0
deadline=$(($(date +%s) + timeout_s))
while :; do
  now=$(date +%s)
  ((now <= deadline)) || fail "HeapwatchLeak for $leak_class did not fire within ${timeout_s}s"

  if [[ -z $leaky_agent || -z $healthy_agent ]]; then
    leaky_agent=$(query "heapwatch_agent_info{pid=\"$leaky_pid\"}" | jq -r '.data.result[0].metric.agent // empty')
    healthy_agent=$(query "heapwatch_agent_info{pid=\"$healthy_pid\"}" | jq -r '.data.result[0].metric.agent // empty')
    if [[ -n $leaky_agent && -n $healthy_agent ]]; then
      t_agents=$(elapsed)
      log "agents in Prometheus: LeakyApp=$leaky_agent HealthyApp=$healthy_agent"
    fi
  fi
  if [[ -n $healthy_agent ]]; then
    n_healthy=$(healthy_snapshots)
    if [[ -z $fill_at ]] && ((n_healthy >= fill_after)); then
      touch "$tmp/fill-cache"
      fill_at=$n_healthy t_fill=$(elapsed)
      log "HealthyApp's cache fill requested at its snapshot $fill_at"
    fi
  fi
  if [[ -n $leaky_agent && -z $t_suspect ]]; then
    n=$(query "heapwatch_leak_suspect{agent=\"$leaky_agent\"} == 1" |
      jq --arg c "$leak_class" '[.data.result[] | select(.metric.class == $c)] | length')
    if ((n > 0)); then t_suspect=$(elapsed); log "heapwatch_leak_suspect{class=\"$leak_class\"} == 1 scraped"; fi
  fi

  alerts=$(curl -sf "$prom_url/api/v1/alerts") || fail "GET /api/v1/alerts failed"
  if [[ -n $healthy_agent ]]; then
    bad=$(jq -c --arg h "$healthy_agent" '[.data.alerts[] | select(.labels.agent == $h)
          | select(.labels.alertname | test("^HeapwatchLeak"))
          | {alertname: .labels.alertname, class: .labels.class, state}]' <<<"$alerts")
    [[ $bad == "[]" ]] || fail "a leak alert names the healthy JVM: $bad"
  fi
  broken=$(jq -c --arg l "$leaky_agent" --arg h "$healthy_agent" '[.data.alerts[] | select(.state == "firing")
           | select(.labels.alertname == "HeapwatchAgentDown" or .labels.alertname == "HeapwatchCollectionsFailing")
           | select(.labels.agent == $l or .labels.agent == $h)
           | {alertname: .labels.alertname, agent: .labels.agent, description: .annotations.description}]' <<<"$alerts")
  [[ $broken == "[]" ]] || fail "collection alerts fire for the test's JVMs: $broken"

  if [[ -n $leaky_agent ]]; then
    mine=$(jq -c --arg a "$leaky_agent" --arg c "$leak_class" '[.data.alerts[]
           | select(.labels.alertname == "HeapwatchLeak" and .labels.agent == $a
                    and (.annotations.summary // "" | contains("(" + $c + ")")))][0] // empty' <<<"$alerts")
    if [[ -n $mine ]]; then
      state=$(jq -r .state <<<"$mine")
      if [[ -z $t_pending ]]; then t_pending=$(elapsed); log "HeapwatchLeak $state for $leak_class"; fi
      if [[ $state == firing && -z $t_firing ]]; then
        t_firing=$(elapsed)
        firing_alert=$mine
        log "HeapwatchLeak firing for $leak_class"
      fi
    elif [[ -n $t_firing ]]; then
      fail "HeapwatchLeak for $leak_class stopped firing while the JVM still leaks"
    fi
  fi
  if [[ -n $t_firing && -n $fill_at ]] && ((($(date +%s%3N) - t_start_ms) / 1000 >= min_observe_s)) &&
    ((n_healthy >= fill_at + 2 * window)); then
    break
  fi
  sleep 1
done

# ---- 5. what fired, and the other views of the same leak -------------------------------------------------
active_at=$(jq -r .activeAt <<<"$firing_alert")
held=$(($(date +%s) - $(date -d "$active_at" +%s)))
for_s=$(sed -E 's/s$//' <<<"$for_override")
[[ $for_s =~ ^[0-9]+$ ]] && ((held >= for_s)) || fail "alert active since $active_at, held only ${held}s (< $for_override)"
description=$(jq -r .annotations.description <<<"$firing_alert")
echo "description: $description"
grep -qF "$tmp/LeakyApp.jar" <<<"$description" || fail "description does not name the JVM's main class"
grep -qE 'grows by [0-9.]+[kMGT]?i?B/s' <<<"$description" || fail "description has no humanized growth rate"

# The alert links to the leak on heapwatchd's web pages (heapwatch_web_info{url}; no web.external_url here,
# so the pages' own address), and the link resolves to a page that shows the leak.
page_url=$(jq -r '.annotations.leak_page_url // empty' <<<"$firing_alert")
firing_leak=$(jq -r .labels.leak <<<"$firing_alert")
[[ $page_url == "http://127.0.0.1:$metrics_port/agents/$leaky_agent/leaks#$firing_leak" ]] ||
  fail "leak_page_url is '$page_url'"
page=$(curl -sf "$page_url") || fail "the alert's link $page_url does not resolve"
grep -qF "id=\"$firing_leak\"" <<<"$page" || fail "the page at $page_url does not show leak $firing_leak"
log "the alert's link $page_url resolves to the leak's page"

ctl_json=$("$heapwatchctl" --server "127.0.0.1:$grpc_port" suspects --json) || fail "heapwatchctl suspects failed"
jq -e --arg a "$leaky_agent" --arg c "$leak_class" \
  '[.. | objects | select(.agent? == $a and .class? == $c)] | length > 0' <<<"$ctl_json" >/dev/null ||
  fail "heapwatchctl suspects --json does not list $leak_class of $leaky_agent: $ctl_json"
jq -e --arg h "$healthy_agent" '[.. | objects | select(.agent? == $h and has("class"))] | length == 0' \
  <<<"$ctl_json" >/dev/null || fail "heapwatchctl lists a suspect of the healthy JVM: $ctl_json"
log "heapwatchctl suspects --json agrees"
sleep 2  # let Prometheus scrape the gRPC request counter

# Every dashboard query runs here; the panels the dashboard exists for return data.
must_have_data='^(Leaks|Leak suspects|Suspect growth rates|Suspect bytes over time|Top classes by bytes \(\$agent\)|Top classes by instances \(\$agent\)|Collections by result|Collection duration|Agents up|Agents|Store size|Snapshot age|gRPC requests|Suspects)$'
n_queries=0
while IFS=$'\t' read -r title expr; do
  q=$(sed -E -e 's/\$__(rate_interval|interval|range)/15s/g' -e 's/\$\{?(agent|instance)\}?/.*/g' -e 's/\$\{?top\}?/10/g' <<<"$expr")
  resp=$(query "$q") || fail "panel '$title': query failed: $q"
  [[ $(jq -r .status <<<"$resp") == success ]] || fail "panel '$title': $resp"
  if [[ $title =~ $must_have_data ]]; then
    (($(jq '.data.result | length' <<<"$resp") > 0)) || fail "panel '$title' has no data: $q"
  fi
  n_queries=$((n_queries + 1))
done < <(jq -r '.panels[] | select(.targets) | .title as $t | .targets[] | [$t, .expr] | @tsv' "$dashboard")
((n_queries >= 20)) || fail "only $n_queries dashboard queries found"
log "all $n_queries dashboard queries ran on Prometheus"

# ---- 6. the healthy patterns reached the detector's statistical tests ------------------------------------
grep -q "cache full" "$tmp/healthy.log" || fail "HealthyApp's cache did not fill"
# Replays the trend detector's size gate (diff/trend_detector.cc) on a class's stored history, one point per
# snapshot from the detector's first: warm-up ends at snapshot index warmup_snapshots; after snapshot j the
# window is the last min(window, j + 1 - warmup_snapshots) snapshots, evaluated once it holds min_snapshots;
# a class whose bytes vary by less than min_growth_bytes over the window is dropped there. Prints
# "<evaluations> <windows reaching the tests> <smallest range> <largest range> <peak bytes>
#  <largest bytes up to the first evaluation>".
size_gate() {
  "$heapwatchctl" --server "127.0.0.1:$grpc_port" history "$healthy_agent" "$1" --json |
    jq -r --argjson w "$window" --argjson m "$min_snapshots" --argjson u "$warmup_snapshots" \
      --argjson g "$min_growth" '
      [.points[].bytes] as $b
      | [range($u; $b | length) as $j
         | ([$w, $j + 1 - $u] | min) as $n
         | select($n >= $m)
         | $b[($j + 1 - $n):($j + 1)] | (max - min)] as $r
      | "\($r | length) \([$r[] | select(. >= $g)] | length) \($r | min) \($r | max) \($b | max)" +
        " \($b[0:($u + $m)] | max)"'
}
read -r c_evals c_reached c_min c_max c_peak c_early < <(size_gate 'HealthyApp$CacheEntry')
read -r s_evals s_reached s_min s_max s_peak _ < <(size_gate 'HealthyApp$Buffered')
log "size gate (min_growth_bytes $min_growth): HealthyApp\$CacheEntry peak $c_peak bytes, window range" \
  "$c_min..$c_max, reached the tests in $c_reached of $c_evals evaluations; HealthyApp\$Buffered peak" \
  "$s_peak bytes, window range $s_min..$s_max, reached the tests in $s_reached of $s_evals evaluations"
[[ $c_early == 0 ]] || fail "HealthyApp's cache was not empty until the detector's first evaluation ($c_early bytes)"
# The fill is seen in at most 4 snapshots, so at least window - 5 windows hold both an empty and a full cache.
((c_reached >= window / 2)) || fail "the size gate dropped HealthyApp's cache fill ($c_reached of $c_evals windows)"
((s_evals > 0 && s_reached == s_evals)) ||
  fail "the size gate dropped HealthyApp's sawtooth in $((s_evals - s_reached)) of $s_evals windows (smallest range $s_min)"

echo "timeline (seconds since heapwatchd started; the JVMs start right after it):"
echo "  both agents visible in Prometheus:        $t_agents"
echo "  LeakyApp\$Leak suspect series scraped:     $t_suspect"
echo "  HeapwatchLeak pending:                     $t_pending"
echo "  HeapwatchLeak firing (for: $for_override):        $t_firing"
echo "  HealthyApp's cache fill requested:       $t_fill (its snapshot $fill_at)"
echo "  healthy JVM observed without a leak alert: $(elapsed)"
ok=1
echo "PASS"
