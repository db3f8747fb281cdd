#!/usr/bin/env bash
# What watching costs a real server: Tomcat 10 (Debian 12 packages) with a multi-GB heap of session data,
# under a steady HTTP load, in three arms of the same length:
#   a  no watcher
#   b  the JDK default: `jcmd <pid> GC.class_histogram` every 60 s
#   c  heapwatchd with its defaults (pause budget 0.001), escalation off
# Throughput comes from ab; the pauses from the JVM's own safepoint log (-Xlog:safepoint), split into heap
# inspections (GC_HeapInspection) and the rest. In arm c heapwatch's own view (agents, liveset, /metrics) is
# recorded and its pause counter compared with the log. A slow session leak (LEAK_RATE requests/s that each
# create a session of VALUE_KB) runs during every arm, so the load is the same in all arms and arm c shows
# the live set rising. See bench/realapp/README.md.
#
# Usage (as root, Debian 12):  bash bench/realapp/tomcat.sh
# Knobs (environment):  ARM_SECONDS=180  ARMS="a b c a b c"  WARMUP_SECONDS=30  FILL_MB=2048  VALUE_KB=16  HEAP=4g  CONCURRENCY=8
#                       LEAK_RATE=20  JCMD_PERIOD=60  RUN_DIR=/tmp/hw-realapp/run-<time>  HW_BIN=/tmp/hw-bin
# Every process it starts is stopped on exit; the whole run is bounded by MAX_SECONDS.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ARM_SECONDS=${ARM_SECONDS:-180}
ARMS=${ARMS:-"a b c a b c"}
WARMUP_SECONDS=${WARMUP_SECONDS:-30}
FILL_MB=${FILL_MB:-2048}
VALUE_KB=${VALUE_KB:-16}
HEAP=${HEAP:-4g}
CONCURRENCY=${CONCURRENCY:-8}
LEAK_RATE=${LEAK_RATE:-20}
JCMD_PERIOD=${JCMD_PERIOD:-60}
SETTLE_SECONDS=${SETTLE_SECONDS:-15}
RUN_DIR=${RUN_DIR:-/tmp/hw-realapp/run-$(date +%Y%m%dT%H%M%S)}
HW_BIN=${HW_BIN:-/tmp/hw-bin}
n_arms=$(wc -w <<<"$ARMS")
MAX_SECONDS=${MAX_SECONDS:-$(( 1500 + n_arms * (ARM_SECONDS + 120) ))}
# shellcheck source=bench/realapp/tomcat_lib.sh
source "$REPO/bench/realapp/tomcat_lib.sh"
CATALINA_HOME=$TOMCAT_HOME
MAIN_CLASS=$TOMCAT_MAIN_CLASS

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }
[[ $(id -u) == 0 ]] || die "run as root (installs packages, attaches to the JVM)"

# ---------------------------------------------------------------- processes we own, stopped on exit
PGIDS=()                 # every background job runs in its own session: its pid is its process group
start_bg() {             # start_bg LOGFILE CMD... ; sets BG_PID
  setsid "${@:2}" >"$1" 2>&1 </dev/null &
  BG_PID=$!
  PGIDS+=("$BG_PID")
}
stop_group() {           # stop_group PGID [GRACE_SECONDS]
  local g=$1 grace=${2:-10} i
  kill -0 -- "-$g" 2>/dev/null || return 0
  kill -TERM -- "-$g" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do kill -0 -- "-$g" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$g" 2>/dev/null || true
}
cleanup() {
  local rc=$? g
  trap - EXIT INT TERM
  for g in "${PGIDS[@]}"; do stop_group "$g" 15; done
  wait 2>/dev/null || true
  log "stopped every process of the run; results in $RUN_DIR"
  exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM
start_bg /dev/null bash -c 'sleep "$0"; echo "MAX_SECONDS=$0 reached, aborting" >&2; kill -TERM "$1"' "$MAX_SECONDS" $$

# ---------------------------------------------------------------- packages and binaries
need=()
for p in tomcat10 tomcat10-examples apache2-utils openjdk-17-jdk-headless curl jq python3; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  log "installing ${need[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
mkdir -p "$HW_BIN"
for b in daemon/heapwatchd ctl/heapwatchctl; do
  [[ -x $HW_BIN/${b#*/} ]] || cp "$REPO/build/$b" "$HW_BIN/" || die "no $HW_BIN/${b#*/} and no $REPO/build/$b"
done
HWD=$HW_BIN/heapwatchd HWCTL=$HW_BIN/heapwatchctl

mkdir -p "$RUN_DIR"
RUN_DIR=$(cd "$RUN_DIR" && pwd)
log "run directory $RUN_DIR; arms: $ARMS, ${ARM_SECONDS}s each; heap $HEAP, fill ${FILL_MB} MB"
{ echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "host: $(hostname) $(nproc) cpus, $(free -g | awk '/Mem:/{print $2}') GiB";
  echo "load at start: $(cat /proc/loadavg)"; echo "java: $(java -version 2>&1 | head -1)";
  echo "tomcat: $(dpkg-query -W -f='${Version}' tomcat10)"; echo "heapwatchd: $(sha256sum "$HWD" | cut -c1-12)";
  echo "ARM_SECONDS=$ARM_SECONDS ARMS=\"$ARMS\" FILL_MB=$FILL_MB VALUE_KB=$VALUE_KB HEAP=$HEAP CONCURRENCY=$CONCURRENCY LEAK_RATE=$LEAK_RATE JCMD_PERIOD=$JCMD_PERIOD"
} >"$RUN_DIR/machine.txt"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---------------------------------------------------------------- CATALINA_BASE under the run directory
BASE=$RUN_DIR/base
PORT=$(free_port)
tomcat_prepare_base "$BASE" "$PORT" || die "could not set the HTTP port in server.xml"

JAVA_OPTS="-Xms$HEAP -Xmx$HEAP -XX:+UseG1GC"
JAVA_OPTS+=" -Xlog:safepoint:file=$RUN_DIR/safepoint.log:timemillis,uptime,level,tags:filecount=0"
JAVA_OPTS+=" -Xlog:gc:file=$RUN_DIR/gc.log:timemillis,uptime,level,tags:filecount=0"
log "starting Tomcat on 127.0.0.1:$PORT"
start_bg "$RUN_DIR/catalina.out" env CATALINA_HOME=$CATALINA_HOME CATALINA_BASE="$BASE" \
  CATALINA_TMPDIR="$BASE/temp" JAVA_OPTS="$JAVA_OPTS" "$CATALINA_HOME/bin/catalina.sh" run
TOMCAT_PGID=$BG_PID
HELLO=http://127.0.0.1:$PORT/examples/servlets/servlet/HelloWorldExample
SESSION=http://127.0.0.1:$PORT/examples/servlets/servlet/SessionExample
tomcat_wait_ready "$HELLO" "$TOMCAT_PGID" || die "Tomcat does not answer $HELLO; see $RUN_DIR/catalina.out"
JPID=$(tomcat_jvm_pid "$TOMCAT_PGID")
[[ -n $JPID ]] || die "no Tomcat JVM found"
log "Tomcat JVM pid $JPID: $(jcmd "$JPID" VM.command_line | grep -o 'java_command:.*')"

# ---------------------------------------------------------------- fill the heap with sessions
BODY=$RUN_DIR/session-body.txt
{ printf 'dataname=k&datavalue='; head -c $((VALUE_KB * 1024)) /dev/zero | tr '\0' x; } >"$BODY"
curl -fs -o /dev/null --data-binary @"$BODY" -H 'Content-Type: application/x-www-form-urlencoded' "$SESSION" ||
  die "session page does not answer"
FILL_N=$((FILL_MB * 1024 / VALUE_KB))
log "filling: $FILL_N sessions of ${VALUE_KB} KB (ab without cookies, POST $SESSION)"
fill_t0=$(date +%s)
timeout 1200 ab -r -q -c "$CONCURRENCY" -n "$FILL_N" -p "$BODY" -T application/x-www-form-urlencoded "$SESSION" \
  >"$RUN_DIR/ab-fill.txt" 2>&1 || die "fill failed; see $RUN_DIR/ab-fill.txt"
log "fill took $(( $(date +%s) - fill_t0 )) s: $(grep -E '^(Complete|Failed) requests' "$RUN_DIR/ab-fill.txt" | tr -s ' ' | paste -sd' ')"
# Check the live data once: a full GC, then the heap occupancy (before the arms, not measured).
jcmd "$JPID" GC.run >/dev/null
jcmd "$JPID" GC.heap_info >"$RUN_DIR/heap_info-after-fill.txt"
sleep 1
LIVE_AFTER_FILL=$(grep -F 'Pause Full' "$RUN_DIR/gc.log" | tail -1 | grep -oE '[0-9]+M->[0-9]+M\([0-9]+M\)' || true)
log "after fill: $(grep -m1 'garbage-first heap' "$RUN_DIR/heap_info-after-fill.txt" | sed 's/^ *//') (full GC: $LIVE_AFTER_FILL)"

# ---------------------------------------------------------------- the slow session leak (every arm)
LEAK_SCRIPT='while :; do t=$(date +%s%N); ab -r -q -c 2 -n "$0" -p "$1" -T application/x-www-form-urlencoded "$2" 2>&1 |
  grep -E "^(Complete|Failed) requests" | tr -s " " | paste -sd" " | sed "s/^/$(date +%s) /";
  d=$(( 1000000000 - ($(date +%s%N) - t) )); ((d > 0)) && sleep "0.$(printf %09d "$d")"; done'
start_bg "$RUN_DIR/leak.log" bash -c "$LEAK_SCRIPT" "$LEAK_RATE" "$BODY" "$SESSION"
LEAK_PGID=$BG_PID
log "slow session leak running: $LEAK_RATE sessions/s of ${VALUE_KB} KB"
# The sessions of the fill expire 30 min after they were created (Tomcat's default session-timeout): all
# arms must end before, or the live set falls under the last arms.
(( n_arms * (ARM_SECONDS + SETTLE_SECONDS + 10) + WARMUP_SECONDS < 1500 )) ||
  log "warning: the arms take longer than ~25 min; the fill's sessions may expire (30 min) during the last arm"
log "warm-up: ${WARMUP_SECONDS}s of the same load, not measured"
ab -r -k -c "$CONCURRENCY" -t "$WARMUP_SECONDS" -n 20000000 "$HELLO" >"$RUN_DIR/ab-warmup.txt" 2>&1 || true
sleep "$SETTLE_SECONDS"

# ---------------------------------------------------------------- the arms
HW_CONFIG=$RUN_DIR/heapwatchd.yaml
printf 'watch:\n  agents:\n    include: ["%s"]\nescalation:\n  enabled: false\n' "$MAIN_CLASS" >"$HW_CONFIG"
echo "arm start_ms end_ms" >"$RUN_DIR/windows.txt"
k=0
for arm in $ARMS; do
  k=$((k + 1)); tag=$k-$arm
  watcher=""
  case $arm in
    a) ;;
    b) start_bg "$RUN_DIR/$tag-jcmd.log" bash -c 'while :; do date +%s.%N; timeout 300 jcmd "$0" GC.class_histogram | grep -E "^Total|^[0-9]+:" | tail -1; sleep "$1"; done' "$JPID" "$JCMD_PERIOD"
       watcher=$BG_PID ;;
    c) d=$RUN_DIR/$tag-heapwatch; mkdir -p "$d"
       start_bg "$d/heapwatchd.log" "$HWD" --data-dir "$d/data" --grpc-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
         --grpc-port-file "$d/grpc.port" --metrics-port-file "$d/metrics.port" --config "$HW_CONFIG"
       watcher=$BG_PID
       for ((i = 0; i < 100; i++)); do [[ -s $d/grpc.port && -s $d/metrics.port ]] && break; sleep 0.1; done
       [[ -s $d/grpc.port ]] || die "heapwatchd did not start; see $d/heapwatchd.log" ;;
    *) die "unknown arm $arm (a, b or c)" ;;
  esac
  log "arm $tag: ${ARM_SECONDS}s of ab -k -c $CONCURRENCY on HelloWorldExample (load $(cut -d' ' -f1-3 /proc/loadavg))"
  echo "$tag load before: $(cat /proc/loadavg)" >>"$RUN_DIR/load.txt"
  pgrep -a heapwatchd | grep -v "^$watcher " | sed "s/^/$tag other heapwatchd: /" >>"$RUN_DIR/others.txt" || true
  t0=$(date +%s%3N)
  ab -r -k -c "$CONCURRENCY" -t "$ARM_SECONDS" -n 20000000 "$HELLO" >"$RUN_DIR/$tag-ab.txt" 2>&1 || true
  t1=$(date +%s%3N)
  echo "$tag load after: $(cat /proc/loadavg)" >>"$RUN_DIR/load.txt"
  echo "$tag $t0 $t1" >>"$RUN_DIR/windows.txt"
  if [[ $arm == c ]]; then
    S=127.0.0.1:$(cat "$d/grpc.port"); M=127.0.0.1:$(cat "$d/metrics.port")
    "$HWCTL" --server "$S" --json agents >"$d/agents.json" || true
    "$HWCTL" --server "$S" agents >"$d/agents.txt" || true
    AGENT=$(jq -r --arg m "$MAIN_CLASS" '[.agents[] | select(.main_class == $m and .state != "down")][0].agent // empty' "$d/agents.json")
    if [[ -n $AGENT ]]; then
      "$HWCTL" --server "$S" liveset "$AGENT" >"$d/liveset.txt" || true
      "$HWCTL" --server "$S" --json liveset "$AGENT" >"$d/liveset.json" || true
      "$HWCTL" --server "$S" history "$AGENT" java.lang.String >"$d/history-String.txt" 2>&1 || true
    fi
    curl -fs "http://$M/metrics" >"$d/metrics.txt" || true
  fi
  [[ -n $watcher ]] && stop_group "$watcher" 30
  log "arm $tag done: $(grep -E '^Requests per second' "$RUN_DIR/$tag-ab.txt" | tr -s ' ')"
  sleep "$SETTLE_SECONDS"
done
stop_group "$LEAK_PGID" 5

# ---------------------------------------------------------------- summary
python3 - "$RUN_DIR" "$ARM_SECONDS" >"$RUN_DIR/results.md" <<'PY'
import json, pathlib, re, sys
run = pathlib.Path(sys.argv[1])
sp_re = re.compile(r'\[(\d+)ms\].*Safepoint "([^"]+)".*Total: (\d+) ns')
sps = [(int(m[1]), m[2], int(m[3]) / 1e9) for m in map(sp_re.search, (run / "safepoint.log").read_text().splitlines()) if m]
wins = [l.split() for l in (run / "windows.txt").read_text().splitlines()[1:]]
def ab(tag):
    t = (run / f"{tag}-ab.txt").read_text()
    g = lambda p: float((re.search(p, t) or [None, "0"])[1])
    return g(r"Requests per second:\s+([\d.]+)"), int(g(r"Complete requests:\s+(\d+)")), \
        int(g(r"Failed requests:\s+(\d+)")), int(g(r"Non-2xx responses:\s+(\d+)"))
rows, base = [], []
for tag, t0, t1 in wins:
    t0, t1 = int(t0), int(t1); dur = (t1 - t0) / 1000
    inwin = [s for s in sps if t0 <= s[0] <= t1]
    hi = [s for s in inwin if s[1] == "GC_HeapInspection"]
    total = sum(s[2] for s in inwin); his = sum(s[2] for s in hi)
    rps, done, failed, non2xx = ab(tag)
    arm = tag.split("-")[1]
    if arm == "a": base.append(rps)
    hw = None
    m = run / f"{tag}-heapwatch" / "metrics.txt"
    if m.exists():
        v = [float(l.split()[-1]) for l in m.read_text().splitlines() if l.startswith("heapwatch_collection_pause_seconds_total{")]
        hw = sum(v) if v else None
    rows.append(dict(tag=tag, arm=arm, dur=dur, rps=rps, failed=failed + non2xx, total=total, n=len(inwin), his=his,
                     nhi=len(hi), maxhi=max((s[2] for s in hi), default=0), other=total - his, hw=hw,
                     maxother=max((s[2] for s in inwin if s[1] != "GC_HeapInspection"), default=0)))
names = {"a": "(a) no watcher", "b": "(b) jcmd GC.class_histogram every 60 s", "c": "(c) heapwatchd defaults"}
b0 = sum(base) / len(base) if base else float("nan")
print("| arm | watcher | req/s | ratio to (a) | paused (all safepoints) | paused fraction | heap-inspection pause | other pauses | heapwatch counter |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    hw = "-" if r["hw"] is None else f'{r["hw"]:.3f} s'
    print(f'| {r["tag"]} | {names[r["arm"]]} | {r["rps"]:.0f}{" (" + str(r["failed"]) + " failed)" if r["failed"] else ""} '
          f'| {r["rps"] / b0:.3f} | {r["total"]:.3f} s ({r["n"]}) | {r["total"] / r["dur"]:.5f} '
          f'| {r["his"]:.3f} s ({r["nhi"]}, max {r["maxhi"]:.3f} s) | {r["other"]:.3f} s (max {r["maxother"]:.3f} s) | {hw} |')
print()
print(f"Arm length {rows[0]['dur']:.0f} s (measured windows); counts of safepoints in parentheses. "
      f"ratio to (a): req/s over the mean of the (a) arms ({b0:.0f} req/s).")
for r in rows:
    if r["hw"] is not None and r["his"] > 0:
        print(f'\nheapwatch counter vs safepoint log ({r["tag"]}): {r["hw"]:.3f} s vs {r["his"]:.3f} s of GC_HeapInspection '
              f'({100 * (r["hw"] - r["his"]) / r["his"]:+.1f} %)')
PY
cat "$RUN_DIR/results.md"

for d in "$RUN_DIR"/*-c-heapwatch; do
  [[ -d $d ]] || continue
  echo; echo "heapwatch's view at the end of arm ${d##*/}:"
  jq -c --arg m "$MAIN_CLASS" '.agents[] | select(.main_class == $m and .state != "down") |
    {agent, state, histogram_mode, last_pause_seconds, total_pause_seconds, paused_fraction, planned_interval_seconds,
     budget_note, over_budget, live_bytes, heap_capacity_bytes, heap_max_bytes}' "$d/agents.json" 2>/dev/null || true
  grep -E '^heapwatch_collection_pause_seconds_total|^heapwatch_collections_total|^heapwatch_heap_live_bytes|^heapwatch_pause_budget_exceeded|^heapwatch_collection_interval_seconds' "$d/metrics.txt" || true
  echo; cat "$d/liveset.txt" 2>/dev/null || true
done
echo; echo "load: $(tr '\n' ';' <"$RUN_DIR/load.txt")"
echo "live data after fill (full GC, gc.log): $LIVE_AFTER_FILL"
echo "slow leak: $(awk '{for (i=1;i<=NF;i++) if ($i=="Complete") n+=$(i+2)} END {print n+0}' "$RUN_DIR/leak.log") sessions created during the arms"
