#!/usr/bin/env bash
# The web pages of a running heapwatchd in a real browser (issue 13): a real leaking JVM
# (tests/e2e/java/EventLeakApp: one leak of six classes into a static ConcurrentHashMap) is watched at
# a 1 s interval with automatic escalation, until the leak's extended dump has its report. Then each
# page is loaded in headless Chromium (--dump-dom: the DOM after parsing) and checked:
#   /                              the agent, its leak count and a link to its leaks page
#   /agents/A/leaks?range=15m      the leak's main class EventLeakApp$Event; its growth plot has as
#                                  many polyline points as the gRPC API has samples of the class in
#                                  the page's range (heapwatchctl history over the same range)
#   /agents/A/reports/D            the accumulation point ConcurrentHashMap$Node[] with its path from
#                                  the GC root (static EVENTS, then table), the treemap with its highlighted
#                                  cell, the dump's metadata
# /metrics is still served on the same listener. Screenshots of the three pages are saved in
# OUT_DIR (agents.png, leaks.png, report.png).
#
# Usage: web_browser_e2e.sh HEAPWATCHD HEAPWATCHCTL E2E_JARS_DIR OUT_DIR
set -euo pipefail
heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL E2E_JARS_DIR OUT_DIR}
heapwatchctl=${2:?}
jars=${3:?}
out=${4:?}
chromium=${HEAPWATCH_CHROMIUM:-chromium}

E2E_LOG_LINES=25 source "$(dirname "$0")/../e2e/e2e_lib.sh" heapwatch-web-e2e
command -v "$chromium" >/dev/null || fail "no $chromium (Debian package chromium; scripts/deps.sh)"
mkdir -p "$out" "$tmp/jars" "$tmp/data" "$tmp/dumps" "$tmp/chromium"
cp "$jars/EventLeakApp.jar" "$tmp/jars/"

java -Xmx1g -XX:+UseSerialGC -jar "$tmp/jars/EventLeakApp.jar" --per-second 5000 --max-seconds 600 \
  >"$tmp/app.log" 2>&1 &
pids+=($!)
app_pid=$!

cat >"$tmp/heapwatchd.yml" <<YAML
watch:
  agents:
    include: ['$tmp/jars/*.jar']
collection:
  discovery_interval: 1s
  pause_budget: 1
trend:
  min_growth_bytes: 262144
escalation:
  enabled: true
  auto: true
  min_dump_interval: 1h
  join_window: 5s
  dump_dir: $tmp/dumps
YAML
"$heapwatchd" --config "$tmp/heapwatchd.yml" --data-dir "$tmp/data" --grpc-listen 127.0.0.1:0 \
  --metrics-listen 127.0.0.1:0 --grpc-port-file "$tmp/grpc.port" \
  --metrics-port-file "$tmp/metrics.port" --interval 1s >"$tmp/heapwatchd.log" 2>&1 &
pids+=($!)
grpc_port=$(wait_port_file "$tmp/grpc.port" 30) || fail "heapwatchd wrote no gRPC port"
port=$(wait_port_file "$tmp/metrics.port" 30) || fail "heapwatchd wrote no metrics port"
base="http://127.0.0.1:$port"
log "heapwatchd: gRPC $grpc_port, metrics and pages on $port"

# The agent, from the agents page (the row's data-agent attribute).
agent=
for _ in $(seq 300); do
  agent=$(curl -sf "$base/" | grep -o 'data-agent="[^"]*"' | head -1 | sed 's/data-agent="//; s/"$//') || true
  [[ -n $agent ]] && break
  sleep 0.1
done
[[ -n $agent ]] || fail "the agents page never listed the JVM"
[[ $agent == *:$app_pid-* || $agent == *"$app_pid"* ]] || log "agent id $agent (pid $app_pid)"
log "agent $agent"
enc_agent=$(jq -rn --arg a "$agent" '$a|@uri')

# Until the leak's report is ready (the leaks page links it).
leaks_url="$base/agents/$enc_agent/leaks?range=15m"
report_path=
for _ in $(seq 480); do
  report_path=$(curl -sf "$leaks_url" | grep -o 'class="report-link" href="[^"]*"' | head -1 |
    sed 's/.*href="//; s/"$//') || true
  [[ -n $report_path ]] && break
  sleep 0.5
done
[[ -n $report_path ]] || fail "no report link on the leaks page within 240 s"
log "report ready: $report_path"

# /metrics still there, same content type as prometheus-cpp's exposer.
ctype=$(curl -sf -o "$tmp/metrics.txt" -w '%{content_type}' "$base/metrics")
[[ $ctype == "text/plain; charset=utf-8" ]] || fail "/metrics content type: $ctype"
grep -q '^heapwatch_' "$tmp/metrics.txt" || fail "/metrics has no heapwatch_ series"

dom() {  # URL FILE
  timeout 60 "$chromium" --headless --disable-gpu --no-sandbox --user-data-dir="$tmp/chromium" \
    --dump-dom "$1" >"$2" 2>>"$tmp/chromium.log" || fail "chromium --dump-dom $1"
}
shot() {  # URL FILE [HEIGHT]
  timeout 60 "$chromium" --headless --disable-gpu --no-sandbox --user-data-dir="$tmp/chromium" \
    --hide-scrollbars --window-size=1280,${3:-1400} --screenshot="$2" "$1" >>"$tmp/chromium.log" 2>&1 ||
    fail "chromium --screenshot $1"
  [[ -s $2 ]] || fail "no screenshot $2"
}

# ---- agents page
dom "$base/" "$tmp/agents.html"
grep -q "data-agent=\"$agent\"" "$tmp/agents.html" || fail "agents page: no row for $agent"
grep -q "href=\"/agents/$enc_agent/leaks\"" "$tmp/agents.html" || fail "agents page: no link to the leaks page"
grep -q 'class="state-up"' "$tmp/agents.html" || fail "agents page: agent not up"
log "agents page: ok ($(grep -c '<svg' "$tmp/agents.html" || true) svg)"

# ---- leaks page
dom "$leaks_url" "$tmp/leaks.html"
grep -q 'data-main-class="EventLeakApp$Event"' "$tmp/leaks.html" || fail "leaks page: main class is not EventLeakApp\$Event"
from_us=$(grep -o 'data-from-us="[0-9]*"' "$tmp/leaks.html" | grep -o '[0-9]*')
to_us=$(grep -o 'data-to-us="[0-9]*"' "$tmp/leaks.html" | grep -o '[0-9]*')
rfc() { date -u -d "@$(($1 / 1000000)).$(printf '%06d' $(($1 % 1000000)))" +%Y-%m-%dT%H:%M:%S.%6NZ; }
# The main class's row: its svg's data-points and its polyline's points.
row=$(tr '\n' ' ' <"$tmp/leaks.html" | grep -o '<tr class="leak-class" data-class="EventLeakApp$Event">.*' |
  sed 's#</tr>.*##')
declared=$(grep -o 'data-points="[0-9]*"' <<<"$row" | head -1 | grep -o '[0-9]*')
plotted=$(grep -o '<polyline[^>]* points="[^"]*"' <<<"$row" | head -1 | sed 's/.* points="//; s/"$//' | wc -w)
expected=$("$heapwatchctl" --server "127.0.0.1:$grpc_port" --json history "$agent" 'EventLeakApp$Event' \
  --since "$(rfc "$from_us")" --until "$(rfc "$to_us")" | jq '.points | length')
log "leaks page: plot of EventLeakApp\$Event has $plotted points (data-points $declared), the API has $expected samples in the range"
((expected >= 3)) || fail "too few samples ($expected) for a meaningful plot"
[[ $plotted == "$expected" && $declared == "$expected" ]] || fail "plot points $plotted / $declared != $expected samples"

# ---- report page
dom "$base$report_path" "$tmp/report.html"
grep -q 'ConcurrentHashMap$Node\[\]' "$tmp/report.html" || fail "report page: no ConcurrentHashMap\$Node[] accumulation point"
grep -q '<code class="ref">static EVENTS</code>' "$tmp/report.html" || fail "report page: path lacks 'static EVENTS'"
grep -q '<code class="ref">table</code>' "$tmp/report.html" || fail "report page: path lacks 'table'"
cells=$(grep -o 'data-cells="[0-9]*"' "$tmp/report.html" | grep -o '[0-9]*')
((cells > 0)) || fail "report page: empty treemap"
grep -q '<rect[^>]*class="highlight"' "$tmp/report.html" || fail "report page: no highlighted treemap cell"
grep -q '<table class="metadata">' "$tmp/report.html" || fail "report page: no dump metadata"
log "report page: accumulation point and path shown, treemap with $cells cells"

shot "$base/" "$out/agents.png"
shot "$leaks_url" "$out/leaks.png"
shot "$base$report_path" "$out/report.png" 5200  # the whole report, treemap included
cp "$tmp/agents.html" "$tmp/leaks.html" "$tmp/report.html" "$out/"
log "screenshots in $out"
ok=1
echo "PASS: web pages in a browser ($(elapsed) s)"
