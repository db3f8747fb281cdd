#!/usr/bin/env bash
# Class loader leak in a real application server (issue 14), end to end: ctest e2e.RealAppRedeploy.
# Tomcat 10 (Debian tomcat10) runs a web application that starts a thread on start-up
# (tests/e2e/realapp/redeploy: RedeployListener plus PARTS generated helper classes it loads) and is redeployed
# every REDEPLOY_S seconds (its WEB-INF/web.xml is touched; the Engine's backgroundProcessorDelay is 1 s, so
# Tomcat's HostConfig reloads the context within a second). Two Tomcats run at once:
#   leaky  the thread is never stopped: every old ParallelWebappClassLoader stays (the thread's Runnable is a
#          class of the old application and its context class loader is the old loader).
#   clean  the listener stops and joins the thread on shutdown: the old loaders can be unloaded.
# heapwatchd watches both (collection.interval 2s, trend defaults, automatic escalation). Redeploys start as
# soon as both agents are watched (the detector's warm-up leaves out the first readings). Asserts, numbers
# printed:
#   leaky  within LEAK_LIMIT_S of the first redeploy, `heapwatchctl leaks` lists exactly one leak for the agent,
#          of kind "class_loader", and still exactly that one at the end; its escalation's extended dump is
#          analysed and `heapwatchctl report AGENT LEAK` names the class-loader-pinned pattern, the thread that
#          pins the loader (as java.lang.Thread@ADDRESS: the pattern does not print thread names), a pinning
#          path from that thread through its context class loader or its Runnable
#          (org.heapwatch.e2e.RedeployListener$Ticker), and the dump's "N instances of
#          org.apache.catalina.loader.ParallelWebappClassLoader define" with N >= 2.
#   clean  no leak of any kind at any poll (every REDEPLOY_S, from the first redeploy until the leaky one's
#          report is done, at least CLEAN_MARGIN_S after the leaky one was flagged, and after the restart); a
#          heap dump of it (jcmd GC.heap_dump) analysed by `heapwatchctl analyze` claims no class-loader-pinned
#          pattern and has no application class defined by several loaders.
#   restart redeploys stop, heapwatchd is stopped (SIGTERM) and started again on the same data directory: the
#          leaky agent's class_loader leak is listed again within RESTART_LIMIT_S of the agent being watched
#          (replayed from the stored class-loading series, far sooner than a fresh trend could flag it: warm-up
#          plus min_snapshots readings, 26 s at 2 s) under the same leak id; the clean agent has none.
# Usage: redeploy_e2e.sh HEAPWATCHD HEAPWATCHCTL REALAPP_DIR. About 60-70 s on a loaded 2-core machine. Needs
# tomcat10, openjdk-17-jdk-headless, jq, curl; run as root (copies /etc/tomcat10).
# RESTART_LIMIT_S and the restarted daemon's 30 s to watch both agents are bounds of the daemon's speed: they
# are multiplied by HEAPWATCH_TIME_SCALE (tests/e2e/e2e_lib.sh hw_scaled; 3 under scripts/sanitize.sh asan,
# where the restarted ASan daemon needs longer than 6 s to replay the leak; 1 otherwise).
set -euo pipefail

heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL REALAPP_DIR}
heapwatchctl=${2:?}
src=${3:?}
PARTS=${PARTS:-300}
REDEPLOY_S=${REDEPLOY_S:-4}
LEAK_LIMIT_S=${LEAK_LIMIT_S:-100}
CLEAN_MARGIN_S=${CLEAN_MARGIN_S:-8}
HEAP=${HEAP:-256m}

# shellcheck source=../e2e_lib.sh
E2E_LOG_LINES=25 source "$(dirname "$0")/../e2e_lib.sh" heapwatch-redeploy-e2e
RESTART_LIMIT_S=${RESTART_LIMIT_S:-$(hw_scaled 6)}
# shellcheck source=../../../bench/realapp/tomcat_lib.sh
source "$(dirname "$0")/../../../bench/realapp/tomcat_lib.sh"

for tool in java javac jar jcmd jq curl; do
  command -v "$tool" >/dev/null || fail "$tool is missing"
done
SERVLET_API=$TOMCAT_HOME/lib/servlet-api.jar
[[ -f $SERVLET_API ]] || fail "Tomcat 10 is not installed (apt-get install tomcat10)"

# ---- the web application: the listener and PARTS helper classes --------------------------------------------
gen=$tmp/gen/org/heapwatch/e2e
mkdir -p "$gen" "$tmp/classes"
{
  echo "package org.heapwatch.e2e;"
  echo "public final class Parts {"
  echo "  public static int loadAll() {"
  echo "    int n = 0;"
  for ((i = 0; i < PARTS; i++)); do echo "    n += Part$i.VALUE.length();"; done
  echo "    return n;"
  echo "  }"
  echo "}"
} >"$gen/Parts.java"
for ((i = 0; i < PARTS; i++)); do
  printf 'package org.heapwatch.e2e;\nfinal class Part%d { static final String VALUE = new String("part %d"); }\n' \
    "$i" "$i" >"$gen/Part$i.java"
done
javac -nowarn -d "$tmp/classes" -cp "$SERVLET_API" "$src"/redeploy/src/org/heapwatch/e2e/*.java "$gen"/*.java

# start_tomcat NAME MODE: a private CATALINA_BASE with the application at /app (a directory: touching its
# web.xml reloads it).
start_tomcat() {
  local name=$1 mode=$2 base=$tmp/$1
  free_port "$name"
  tomcat_prepare_base "$base" "${port[$name]}" || fail "cannot edit $base/conf/server.xml"
  sed -i 's#<Engine name="Catalina" defaultHost="localhost">#<Engine name="Catalina" defaultHost="localhost" backgroundProcessorDelay="1">#' \
    "$base/conf/server.xml"
  grep -q 'backgroundProcessorDelay="1"' "$base/conf/server.xml" || fail "cannot set backgroundProcessorDelay"
  rm -f "$base/conf/Catalina/localhost/examples.xml"  # not needed here: Tomcat starts 8-10 s sooner
  mkdir -p "$base/webapps/app/WEB-INF"
  cp -r "$tmp/classes" "$base/webapps/app/WEB-INF/classes"
  sed -e "s/@MODE@/$mode/" "$src/redeploy/WEB-INF/web.xml" >"$base/webapps/app/WEB-INF/web.xml"
  tomcat_launch "$name" "$base" -Xmx"$HEAP" -XX:+UseG1GC
}

# ---- heapwatchd, then both Tomcats ---------------------------------------------------------------------------
# min_dump_interval 0s: on a loaded machine a slow reload can end the leak's episode for a reading and the trend
# flags it again under a new id (check_leaks); escalation dumps the new leak, and with the default 1 h interval
# that dump would wait QUEUED past LEAK_LIMIT_S (seen twice at load 13-17 on 2026-11-25, the first dump DONE).
hw_config() {
  cat <<EOF
watch:
  agents:
    include: ["$tmp/*.jar"]
collection:
  interval: 2s
  pause_budget: 1
  discovery_interval: 1s
escalation:
  enabled: true
  auto: true
  join_window: 0s
  min_dump_interval: 0s
  gzip: false
EOF
}
start_heapwatchd "$heapwatchd" "$tmp/hw" < <(hw_config)
ctl() { "$heapwatchctl" --server "127.0.0.1:$grpc" "$@"; }

names=(leaky clean)
for n in "${names[@]}"; do start_tomcat "$n" "$n"; done
deadline=$(($(date +%s) + 120))
declare -A agent
# watched NAME: the agent id of Tomcat NAME once heapwatchd watches it (empty before).
watched() {
  ctl --json agents | jq -r --arg m "$tmp/$1/tomcat.jar" \
    '.agents[] | select(.state == "up" and .main_class == $m) | .agent' | head -1
}
for n in "${names[@]}"; do
  until [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${port[$n]}/app/" || true) =~ ^[2-4] ]]; do
    kill -0 "${pid_of[$n]}" 2>/dev/null || fail "$n exited; see $n.log"
    (($(date +%s) < deadline)) || fail "$n does not answer within 120 s"
    sleep 0.5
  done
  until [[ -n ${agent[$n]:-} ]]; do
    agent[$n]=$(watched "$n")
    [[ -n ${agent[$n]} ]] && break
    (($(date +%s) < deadline)) || fail "heapwatchd does not watch $n within 120 s"
    sleep 0.5
  done
done
log "heapwatchd on 127.0.0.1:$grpc watches leaky=${agent[leaky]} clean=${agent[clean]}; redeploying every ${REDEPLOY_S}s"

# ---- redeploys, polling the leaks --------------------------------------------------------------------------
# leaks_of AGENT: "leak kind" lines of the agent's leaks.
leaks_of() { ctl --json leaks | jq -r --arg a "$1" '.leaks[]? | select(.agent == $a) | "\(.leak) \(.kind)"'; }
classes() {
  ctl --json agents | jq -r --arg a "$1" '.agents[] | select(.agent == $a) |
    "\(.classes_loaded // 0) classes, metaspace \((.metaspace_used_bytes // 0 | tonumber) / 1048576 | floor) MiB"'
}
report_state() {
  ctl --json reports "$1" 2>/dev/null | jq -r '[.dumps[]?.state] | first // ""' || true
}
# check_leaks: fails on a leak of the clean agent, a second leak of the leaky one or one of another kind; sets
# leak_id. (The trend may end the leak's episode for a reading or two when a reload is slow, and flag it again
# under a new id: still one leak at a time.)
check_leaks() {
  local clean_leaks leaky_leaks
  clean_leaks=$(leaks_of "${agent[clean]}")
  [[ -z $clean_leaks ]] || fail "clean: leak(s) after $(($(date +%s) - start)) s: $clean_leaks"
  leaky_leaks=$(leaks_of "${agent[leaky]}")
  [[ -z $leaky_leaks ]] && return 0
  (($(wc -l <<<"$leaky_leaks") == 1)) || fail "leaky: more than one leak: $(echo $leaky_leaks)"
  [[ $leaky_leaks == *" class_loader" ]] || fail "leaky: a leak of another kind: $leaky_leaks"
  [[ -z $leak_id || $leaky_leaks == "$leak_id "* ]] || log "leaky: the leak is now ${leaky_leaks%% *} (was $leak_id)"
  leak_id=${leaky_leaks%% *}
}
start=$(date +%s)
redeploys=0 flagged_at= leak_id= state=
while :; do
  for n in "${names[@]}"; do touch "$tmp/$n/webapps/app/WEB-INF/web.xml"; done
  redeploys=$((redeploys + 1))
  sleep "$REDEPLOY_S"
  now=$(($(date +%s) - start))
  check_leaks
  [[ -n $leak_id && -z $flagged_at ]] && flagged_at=$now
  [[ -n $leak_id ]] && state=$(report_state "${agent[leaky]}")
  log "redeploy $redeploys at ${now}s: leaky $(classes "${agent[leaky]}"), clean $(classes "${agent[clean]}")${leak_id:+, leak $leak_id}${state:+, dump $state}"
  [[ $state == EXTENDED_DUMP_STATE_FAILED ]] && fail "leaky: the extended dump failed: $(ctl reports "${agent[leaky]}")"
  if [[ $state == EXTENDED_DUMP_STATE_DONE ]] && ((now >= flagged_at + CLEAN_MARGIN_S)); then break; fi
  ((now < LEAK_LIMIT_S)) || fail "leaky: no class_loader leak with an analysed dump within $LEAK_LIMIT_S s ($redeploys redeploys, leak ${leak_id:-none}, dump ${state:-none})"
done
log "leaky: class_loader leak $leak_id flagged ${flagged_at}s after the first redeploy ($redeploys redeploys so far); clean: none"
ctl leaks | grep -A1 "$leak_id" || true

# ---- the leaky report: the pattern, the thread, the path ---------------------------------------------------
# The leak may end and be flagged again under a new id between the poll and the report (a slow reload on a
# loaded machine): then the current id is read again and, once its dump is analysed, its report taken.
reported=0
for _ in $(seq 10); do
  if ctl report "${agent[leaky]}" "$leak_id" >"$tmp/leaky-report.txt" 2>&1; then reported=1; break; fi
  grep -q 'has no current leak' "$tmp/leaky-report.txt" || break
  sleep "$REDEPLOY_S"
  check_leaks
  log "leaky: the leak is now ${leak_id:-none}; its dump $(report_state "${agent[leaky]}")"
done
((reported)) || fail "report failed: $(tail -3 "$tmp/leaky-report.txt")"
sed -n '1,/^  Why and the usual fix/p' "$tmp/leaky-report.txt" | head -60
grep -q 'Known leak pattern: .*\[class-loader-pinned\]' "$tmp/leaky-report.txt" ||
  fail "leaky: the report names no class-loader-pinned pattern"
grep -qE 'pinned because .*thread java.lang.Thread@' "$tmp/leaky-report.txt" ||
  fail "leaky: the report does not say which thread pins the loader"
path=$(sed -n '/^  path:/,/^  Why/p' "$tmp/leaky-report.txt")
# The thread pins the loader either as its context class loader (Thread.contextClassLoader) or through the
# application's Runnable it runs (its `target` field, or the run() frame holding the Ticker): whichever the
# breadth-first search meets first.
grep -q 'GC root (.*) java.lang.Thread@' <<<"$path" || fail "leaky: the pinning path does not start at a thread: $path"
grep -qE 'contextClassLoader|target|RedeployListener\$Ticker' <<<"$path" ||
  fail "leaky: the pinning path goes through neither the thread's context class loader nor its Runnable: $path"
line=$(grep -m1 'class loaders: [0-9]* instances of org.apache.catalina.loader.ParallelWebappClassLoader define' \
  "$tmp/leaky-report.txt") || fail "leaky: the report names no duplicated webapp classes"
loaders=$(sed -E 's/.*class loaders: ([0-9]+) instances.*/\1/' <<<"$line")
((loaders >= 2)) || fail "leaky: only $loaders loaders after $redeploys redeploys"

# ---- the clean dump: no pattern, no duplicated classes -----------------------------------------------------
jcmd "${pid_of[clean]}" GC.heap_dump "$tmp/clean.hprof" >/dev/null
ctl analyze "$tmp/clean.hprof" >"$tmp/clean-report.txt" 2>&1 || fail "analyze clean failed: $(tail -3 "$tmp/clean-report.txt")"
rm -f "$tmp/clean.hprof"
if grep -q 'class-loader-pinned' "$tmp/clean-report.txt"; then
  fail "clean: the dump claims a pinned class loader: $(grep -A3 'class-loader-pinned' "$tmp/clean-report.txt")"
fi
if grep -q 'class loaders: [0-9]* instances of .* define org.heapwatch' "$tmp/clean-report.txt"; then
  fail "clean: several loaders define the application's classes"
fi
log "leaky: report names class-loader-pinned, the pinning thread and $loaders ParallelWebappClassLoaders; clean dump: no pattern, $(grep -m1 '^Class loaders:' "$tmp/clean-report.txt" || echo 'no class loader line')"

# ---- restart: the leak is replayed from the store ----------------------------------------------------------
# The leak as the daemon has it right before it stops (redeploying on while an episode happens to be over).
before=
for _ in $(seq 5); do
  before=$(leaks_of "${agent[leaky]}")
  [[ -n $before ]] && break
  touch "$tmp/leaky/webapps/app/WEB-INF/web.xml"
  sleep "$REDEPLOY_S"
done
[[ -n $before ]] || fail "leaky: no class_loader leak to replay before the restart"
kill -TERM "$hw_pid"
for _ in $(seq 100); do kill -0 "$hw_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$hw_pid" 2>/dev/null && fail "heapwatchd did not stop within 10 s of SIGTERM"
start_heapwatchd "$heapwatchd" "$tmp/hw" heapwatchd-2 < <(hw_config)
restarted=$(date +%s%3N)
# listed AGENT: whether the daemon lists the agent (in any state: its replayed leaks are there before its first
# collection).
listed() { ctl --json agents 2>/dev/null | jq -e --arg a "$1" 'any(.agents[]?; .agent == $a)' >/dev/null; }
until listed "${agent[leaky]}" && listed "${agent[clean]}"; do
  (($(date +%s%3N) - restarted < $(hw_scaled 30) * 1000)) ||
    fail "the restarted heapwatchd does not watch both agents within $(hw_scaled 30) s"
  sleep 0.2
done
watched_at=$(date +%s%3N)
again=
until [[ -n $again ]]; do
  again=$(leaks_of "${agent[leaky]}" | grep ' class_loader$' || true)
  (($(date +%s%3N) - watched_at < RESTART_LIMIT_S * 1000)) || break
  [[ -n $again ]] || sleep 0.2
done
[[ -n $again ]] || fail "restart: no class_loader leak for the leaky agent within $RESTART_LIMIT_S s of watching it again"
[[ ${again%% *} == "${before%% *}" ]] || fail "restart: the leak is $again, was $before (same readings, same leak id)"
leaks_of "${agent[clean]}" | grep -q . && fail "restart: the clean agent has a leak: $(leaks_of "${agent[clean]}")"
grep -m1 "agent ${agent[leaky]}.*replayed" "$tmp/heapwatchd-2.log" || true
log "restart: leak $again listed $(( ($(date +%s%3N) - watched_at) )) ms after the leaky agent was watched again ($(( (watched_at - restarted) )) ms after the start)"
log "PASS: leaky flagged ${flagged_at}s after the first redeploy, one class_loader leak, pattern and path named; clean quiet; leak replayed after a restart"
ok=1
