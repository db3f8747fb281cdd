#!/usr/bin/env bash
# Class loader leak in a real application server (issue 14, part B): Tomcat 10 (Debian tomcat10) runs a web
# application that starts a thread on start-up (tests/e2e/realapp/redeploy: RedeployListener plus PARTS
# generated helper classes it loads) and is redeployed every REDEPLOY_S seconds (its WEB-INF/web.xml is touched;
# the Engine's backgroundProcessorDelay is 1 s, so Tomcat's HostConfig reloads the context within a second).
#   leaky  the thread is never stopped: every old ParallelWebappClassLoader stays (the thread's Runnable is a
#          class of the old application and its context class loader is the old loader).
#   clean  the listener stops and joins the thread on shutdown: the old loaders can be unloaded.
# heapwatchd watches both (collection.interval 2s, escalation off). Asserts, numbers printed:
#   leaky  `heapwatchctl --json leaks` lists a leak of kind "class_loader" for the agent within LEAK_LIMIT_S of
#          the first redeploy; a heap dump of it analysed by `heapwatchctl analyze` says "class loaders: N
#          instances of org.apache.catalina.loader.ParallelWebappClassLoader define" with N >= REDEPLOYS/2.
#   clean  no leak of kind "class_loader" at any poll until the leaky one was flagged (and at least
#          CLEAN_MIN_S); its dump has no class name defined by several ParallelWebappClassLoaders... after a
#          System.gc (jcmd GC.run) has let the JVM unload the old loaders.
# Usage: redeploy_e2e.sh HEAPWATCHD HEAPWATCHCTL REALAPP_DIR. Takes about 2-3 minutes (not in ctest; see
# docs/class-loaders.md). Needs tomcat10, openjdk-17-jdk-headless, jq, curl; run as root (copies /etc/tomcat10).
set -euo pipefail

heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL REALAPP_DIR}
heapwatchctl=${2:?}
src=${3:?}
PARTS=${PARTS:-300}
REDEPLOY_S=${REDEPLOY_S:-4}
LEAK_LIMIT_S=${LEAK_LIMIT_S:-150}
CLEAN_MIN_S=${CLEAN_MIN_S:-60}
HEAP=${HEAP:-256m}

# shellcheck source=../e2e_lib.sh
E2E_LOG_LINES=25 source "$(dirname "$0")/../e2e_lib.sh" heapwatch-redeploy-e2e
# shellcheck source=../../../bench/realapp/tomcat_lib.sh
source "$(dirname "$0")/../../../bench/realapp/tomcat_lib.sh"

for tool in java javac jar jq curl; do
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

used_ports=" "
declare -A port pid_of
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 12000))
    [[ $used_ports == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      used_ports+="$p "
      port[$1]=$p
      return 0
    fi
  done
  fail "no free port"
}

# start_tomcat NAME MODE: a private CATALINA_BASE with the application at /app (a directory: touching its
# web.xml reloads it), started as `java -jar <base>/tomcat.jar` (heapwatchd includes "<tmp>/*.jar").
start_tomcat() {
  local name=$1 mode=$2 base=$tmp/$1
  free_port "$name"
  tomcat_prepare_base "$base" "${port[$name]}" || fail "cannot edit $base/conf/server.xml"
  sed -i 's#<Engine name="Catalina" defaultHost="localhost">#<Engine name="Catalina" defaultHost="localhost" backgroundProcessorDelay="1">#' \
    "$base/conf/server.xml"
  grep -q 'backgroundProcessorDelay="1"' "$base/conf/server.xml" || fail "cannot set backgroundProcessorDelay"
  mkdir -p "$base/webapps/app/WEB-INF"
  cp -r "$tmp/classes" "$base/webapps/app/WEB-INF/classes"
  sed -e "s/@MODE@/$mode/" "$src/redeploy/WEB-INF/web.xml" >"$base/webapps/app/WEB-INF/web.xml"
  printf 'Main-Class: org.apache.catalina.startup.Bootstrap\nClass-Path: %s %s\n' \
    "$TOMCAT_HOME/bin/bootstrap.jar" "$TOMCAT_HOME/bin/tomcat-juli.jar" >"$base/launcher.mf"
  jar --create --file "$base/tomcat.jar" --manifest "$base/launcher.mf"
  (cd "$base" && exec java -Xmx"$HEAP" -XX:+UseG1GC \
    -Djava.util.logging.config.file="$base/conf/logging.properties" \
    -Djava.util.logging.manager=org.apache.juli.ClassLoaderLogManager \
    --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED \
    --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED \
    --add-opens=java.base/java.util.concurrent=ALL-UNNAMED --add-opens=java.rmi/sun.rmi.transport=ALL-UNNAMED \
    -Dcatalina.base="$base" -Dcatalina.home="$TOMCAT_HOME" -Djava.io.tmpdir="$base/temp" \
    -jar "$base/tomcat.jar" start) >"$tmp/$name.log" 2>&1 </dev/null &
  pid_of[$name]=$!
  pids+=("${pid_of[$name]}")
}

# ---- heapwatchd --------------------------------------------------------------------------------------------
mkdir -p "$tmp/hw/data"
cat >"$tmp/hw/heapwatchd.yml" <<EOF
data_dir: $tmp/hw/data
grpc_listen: 127.0.0.1:0
metrics_listen: 127.0.0.1:0
grpc_port_file: $tmp/hw/grpc.port
metrics_port_file: $tmp/hw/metrics.port
watch:
  agents:
    include: ["$tmp/*.jar"]
collection:
  interval: 2s
  pause_budget: 1
  discovery_interval: 1s
escalation:
  enabled: false
EOF
"$heapwatchd" --config "$tmp/hw/heapwatchd.yml" >"$tmp/heapwatchd.log" 2>&1 &
pids+=($!)
grpc=$(wait_port_file "$tmp/hw/grpc.port" 30) || fail "heapwatchd wrote no gRPC port"
ctl() { "$heapwatchctl" --server "127.0.0.1:$grpc" "$@"; }

names=(leaky clean)
for n in "${names[@]}"; do start_tomcat "$n" "$n"; done
deadline=$(($(date +%s) + 150))
declare -A agent
for n in "${names[@]}"; do
  until curl -fs -o /dev/null "http://127.0.0.1:${port[$n]}/app/"; do
    curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${port[$n]}/app/" | grep -q 404 && break
    kill -0 "${pid_of[$n]}" 2>/dev/null || fail "$n exited; see $n.log"
    (($(date +%s) < deadline)) || fail "$n does not answer within 150 s"
    sleep 0.5
  done
  until [[ -n ${agent[$n]:-} ]]; do
    agent[$n]=$(ctl --json agents | jq -r --arg m "$tmp/$n/tomcat.jar" \
      '.agents[] | select(.state == "up" and .main_class == $m) | .agent' | head -1)
    [[ -n ${agent[$n]} ]] && break
    (($(date +%s) < deadline)) || fail "heapwatchd does not watch $n within 150 s"
    sleep 1
  done
done
log "heapwatchd on 127.0.0.1:$grpc watches leaky=${agent[leaky]} clean=${agent[clean]}; warm-up (12 s)"
sleep 12

# ---- redeploys, polling the leaks --------------------------------------------------------------------------
class_loader_leak() {
  ctl --json leaks | jq -r --arg a "$1" '.leaks[] | select(.agent == $a and .kind == "class_loader") | .leak' |
    head -1
}
classes() {
  ctl --json agents | jq -r --arg a "$1" '.agents[] | select(.agent == $a) |
    "\(.classes_loaded // 0) \(.metaspace_used_bytes // 0)"'
}
start=$(date +%s)
redeploys=0 flagged_at= leak_id=
while :; do
  for n in "${names[@]}"; do touch "$tmp/$n/webapps/app/WEB-INF/web.xml"; done
  redeploys=$((redeploys + 1))
  sleep "$REDEPLOY_S"
  now=$(($(date +%s) - start))
  [[ -n $(class_loader_leak "${agent[clean]}") ]] && fail "clean: a class_loader leak after $now s"
  if [[ -z $leak_id ]]; then
    leak_id=$(class_loader_leak "${agent[leaky]}")
    [[ -n $leak_id ]] && flagged_at=$now
  fi
  log "redeploy $redeploys at ${now}s: leaky classes/metaspace $(classes "${agent[leaky]}"), clean $(classes "${agent[clean]}")${leak_id:+, leak $leak_id}"
  if [[ -n $leak_id ]] && ((now >= CLEAN_MIN_S)); then break; fi
  ((now < LEAK_LIMIT_S)) || fail "leaky: no class_loader leak within $LEAK_LIMIT_S s ($redeploys redeploys)"
done
ctl leaks | grep -A1 "$leak_id" || true
log "leaky: class_loader leak $leak_id flagged ${flagged_at}s after the first redeploy ($redeploys redeploys so far); clean: none"

# ---- dumps -------------------------------------------------------------------------------------------------
for n in "${names[@]}"; do
  jcmd "${pid_of[$n]}" GC.run >/dev/null
  jcmd "${pid_of[$n]}" GC.heap_dump "$tmp/$n.hprof" >/dev/null
  ctl analyze "$tmp/$n.hprof" >"$tmp/$n.report" 2>&1 || fail "analyze $n failed: $(tail -3 "$tmp/$n.report")"
  log "$n dump: $(grep -m1 '^Class loaders:' "$tmp/$n.report")"
  grep "class loaders:" "$tmp/$n.report" | head -3 || true
done
line=$(grep -m1 'class loaders: [0-9]* instances of org.apache.catalina.loader.ParallelWebappClassLoader define' \
  "$tmp/leaky.report") || fail "leaky: the dump names no duplicated webapp classes"
loaders=$(sed -E 's/.*class loaders: ([0-9]+) instances.*/\1/' <<<"$line")
((loaders >= redeploys / 2)) || fail "leaky: only $loaders loaders after $redeploys redeploys"
if grep -q 'class loaders: [0-9]* instances of org.apache.catalina.loader.ParallelWebappClassLoader define org.heapwatch' \
  "$tmp/clean.report"; then
  fail "clean: several webapp loaders define the application's classes"
fi
log "PASS: leaky dump: $loaders ParallelWebappClassLoaders define the application's classes; clean: one"
ok=1
