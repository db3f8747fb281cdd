#!/usr/bin/env bash
# Makes a heap dump of a real application server for the analysis benchmark: Debian 12's Tomcat 10 with its
# examples web application, filled with SESSIONS HTTP sessions (each created by one POST without cookies to
# SessionExample, holding one attribute of VALUE_BYTES characters; the classic session-held data), dumped with
# `jcmd <pid> GC.heap_dump` (live objects, after a full GC), then stopped.
# Usage: make_tomcat_dump.sh OUT.hprof        (reuses OUT.hprof when it exists; as root: may install packages)
# Knobs (environment): SESSIONS=300000  VALUE_BYTES=256  HEAP=3g  CONCURRENCY=4
# Measured (2026-11-24, JDK 17.0.15, Tomcat 10.1): see the analysis benchmark's section in README.md.
set -euo pipefail
out=$1
if [[ -s "$out" ]]; then
  echo "make_tomcat_dump: reusing $out ($(stat -c %s "$out") bytes)" >&2
  exit 0
fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/realapp/tomcat_lib.sh
source "$repo/bench/realapp/tomcat_lib.sh"
SESSIONS=${SESSIONS:-300000}
VALUE_BYTES=${VALUE_BYTES:-256}
HEAP=${HEAP:-3g}
CONCURRENCY=${CONCURRENCY:-4}
log() { printf '[%(%H:%M:%S)T] make_tomcat_dump: %s\n' -1 "$*" >&2; }

need=()
for p in tomcat10 tomcat10-examples apache2-utils curl; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if ((${#need[@]})); then
  log "installing ${need[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

work=$(mktemp -d /var/tmp/hw-tomcat-dump.XXXXXX)
tomcat_pgid=""
cleanup() {
  if [[ -n $tomcat_pgid ]]; then
    kill -TERM -- "-$tomcat_pgid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 -- "-$tomcat_pgid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$tomcat_pgid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
tomcat_prepare_base "$work/base" "$port" || { log "could not set the HTTP port"; exit 1; }
setsid env CATALINA_HOME="$TOMCAT_HOME" CATALINA_BASE="$work/base" CATALINA_TMPDIR="$work/base/temp" \
  JAVA_OPTS="-Xms$HEAP -Xmx$HEAP -XX:+UseG1GC" "$TOMCAT_HOME/bin/catalina.sh" run \
  >"$work/catalina.out" 2>&1 </dev/null &
tomcat_pgid=$!
session_url=http://127.0.0.1:$port/examples/servlets/servlet/SessionExample
tomcat_wait_ready "http://127.0.0.1:$port/examples/servlets/servlet/HelloWorldExample" "$tomcat_pgid" ||
  { log "Tomcat did not start:"; tail -20 "$work/catalina.out" >&2; exit 1; }
jpid=$(tomcat_jvm_pid "$tomcat_pgid")
[[ -n $jpid ]] || { log "no Tomcat JVM found"; exit 1; }
body=$work/body.txt
{ printf 'dataname=k&datavalue='; head -c "$VALUE_BYTES" /dev/zero | tr '\0' x; } >"$body"
log "Tomcat pid $jpid on 127.0.0.1:$port: creating $SESSIONS sessions of ${VALUE_BYTES} bytes"
ab -r -q -c "$CONCURRENCY" -n "$SESSIONS" -p "$body" -T application/x-www-form-urlencoded "$session_url" \
  >"$work/ab.txt" 2>&1 || { log "ab failed:"; cat "$work/ab.txt" >&2; exit 1; }
grep -E '^(Complete|Failed) requests|^Requests per second' "$work/ab.txt" | tr -s ' ' >&2
mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
rm -f "$tmp"
jcmd "$jpid" GC.heap_dump "$tmp" >&2
mv "$tmp" "$out"
log "wrote $out ($(stat -c %s "$out") bytes)"
