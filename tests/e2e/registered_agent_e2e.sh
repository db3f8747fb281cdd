#!/usr/bin/env bash
# Registered agents end to end (issue 10, docs/agents.md, docs/agent.md): real JVMs run heapwatch's
# in-process agent (libheapwatch_agent.so) and register with real heapwatchd processes, one over a UNIX
# socket, one over loopback TCP with an `agent` token, and two over TLS (a token or a client certificate;
# client certificates only).
#
# Usage: registered_agent_e2e.sh HEAPWATCHD HEAPWATCHCTL AGENT_SO JAVA_SRC_DIR
#
# Four daemons (one agent listener each), none watching any JVM through the attach socket:
#   unix  agents.listen unix:$tmp/run/agent.sock, no tokens
#   tcp   agents.listen 127.0.0.1:0 with a tokens file (`agent`, `read` and `admin` tokens)
#   tls   agents.listen 127.0.0.1:0 with the same tokens file and TLS: a certificate for 127.0.0.1 from a
#         CA made here with openssl, client certificates of that CA requested, CN e2e-agent-mtls mapped
#         to role `agent` and e2e-reader to `read`; collection.interval 1h, so that its agents deliver only
#         the histograms asked for
#   mtls  as tls without a tokens file: client certificates are the only credential, required in the
#         handshake (e2e-agent-mtls -> agent, e2e-reader -> read, which heapwatchctl uses to list agents)
# Three JVMs of StaticCacheApp (a HashMap in a static field that grows ~55 KiB per 100 ms):
#   UnixApp  -agentpath:...=address=unix:...            -> unix daemon
#   TcpApp   -agentpath:...=address=127.0.0.1:P,token_file=agent.secret -> tcp daemon
#   BadApp   -agentpath:...=address=127.0.0.1:P,token_file=wrong.secret -> refused; runs on, one log line
# and seven of SteadyApp (a constant live set), five for the tls daemon and two for the mtls daemon:
#   TlsApp       tls_ca=ca.pem,token_file=agent.secret             TLS, the daemon's certificate checked
#   MtlsApp      tls_ca=ca.pem,tls_cert=mtls.pem,tls_key=mtls.key  mutual TLS, no token
#   WrongCaApp   tls_ca=other-ca.pem,token_file=agent.secret       -> handshake fails; runs on, one log line
#   StrangerApp  a client certificate of the CA, CN not mapped      -> UNAUTHENTICATED; runs on, one line
#   ReaderApp    a client certificate whose CN is mapped to read    -> PERMISSION_DENIED; runs on, one line
#   CertOnlyApp  (mtls) tls_ca=ca.pem,tls_cert=mtls.pem,tls_key=mtls.key
#   NoCertApp    (mtls) tls_ca=ca.pem,token_file=agent.secret -> no certificate: the daemon closes the
#                connection (UNAVAILABLE); runs on, one log line
# Checks:
#   1. UnixApp and TcpApp are listed with kind "registered" by their daemon; BadApp is listed by neither,
#      logs exactly one "heapwatch-agent:" line, keeps running, and the tcp daemon counts the refusal.
#   2. Each registered JVM gets a leak; its automatic extended dump travels through the agent (state DONE),
#      and the leak's report names the accumulation point (java.util.HashMap) and the static field
#      `static CACHE`.
#   3. No raw dump is left: none in either daemon's dump directory, no /tmp/heapwatch-agent-<pid>-*
#      directory of either JVM.
#   4. Refusals on the tcp daemon's query API: no token -> UNAUTHENTICATED (exit 1, "UNAUTHENTICATED"),
#      a `read` token calling TriggerExtendedDump -> PERMISSION_DENIED.
#   5. The unix daemon is killed with SIGKILL for 3 s and restarted: the agent reconnects and delivers what
#      it buffered; every histogram time of the agent's leaking class is stored once (no duplicate time), the
#      outage leaves no hole longer than 2.5 intervals, and the daemon counts no duplicate delivery and no gap.
#   6. TLS: TlsApp and MtlsApp are listed with kind "registered" by the tls daemon, CertOnlyApp by the mtls
#      daemon, and their agents log nothing; WrongCaApp, StrangerApp, ReaderApp and NoCertApp are listed by
#      no daemon, each logs exactly one "heapwatch-agent:" line naming its refusal, nothing from gRPC
#      itself, and runs on; the tls daemon counts the unmapped_certificate and wrong_role refusals.
#   7. Histogram now (`heapwatchctl collect`, over the TLS query listener with the admin token): `--mode
#      all` and `--mode live` of TlsApp and `--mode live` of MtlsApp each return once the histogram is
#      stored: the store's snapshot count rises by exactly one, the agent's java.lang.String history gains
#      exactly one point, at the time collect returned and in the mode asked for, and
#      heapwatch_store_commits_total rises. A `read` token's collect is PERMISSION_DENIED and stores nothing.
#      Then the tls and mtls daemons and their JVMs are stopped, so that they do not slow checks 2, 3 and 5.
set -euo pipefail
heapwatchd=${1:?usage: $0 HEAPWATCHD HEAPWATCHCTL AGENT_SO JAVA_SRC_DIR}
heapwatchctl=${2:?}
agent_so=${3:?}
java_src=${4:?}

# shellcheck source=e2e_lib.sh
E2E_LOG_LINES=25 source "$(dirname "$0")/e2e_lib.sh" heapwatch-registered
mkdir -p "$tmp/classes" "$tmp/jar" "$tmp/run"
for d in unix tcp tls mtls; do mkdir -p "$tmp/dumps-$d" "$tmp/d-$d"; done
chmod 700 "$tmp/run"
javac -d "$tmp/classes" "$java_src/StaticCacheApp.java" "$java_src/SteadyApp.java" "$java_src/TestSupport.java"
for app in UnixApp TcpApp BadApp; do
  jar --create --file "$tmp/jar/$app.jar" --main-class StaticCacheApp -C "$tmp/classes" .
done
for app in TlsApp MtlsApp WrongCaApp StrangerApp ReaderApp CertOnlyApp NoCertApp; do
  jar --create --file "$tmp/jar/$app.jar" --main-class SteadyApp -C "$tmp/classes" .
done

# Tokens: secrets in files, their SHA-256 in the tokens file (docs/security.md).
for who in agent read admin wrong; do
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/$who.secret"
done
{
  for who in agent read admin; do
    echo "$who e2e-$who $(tr -d '\n' <"$tmp/$who.secret" | sha256sum | cut -d' ' -f1)"
  done
} >"$tmp/tokens"
# The tls and mtls daemons' CA and certificates, and a CA that signed none of them.
pki_ca "$tmp/pki" ca
pki_cert "$tmp/pki" ca server localhost server
pki_cert "$tmp/pki" ca mtls e2e-agent-mtls client
pki_cert "$tmp/pki" ca stranger e2e-stranger client
pki_cert "$tmp/pki" ca reader e2e-reader client
pki_ca "$tmp/pki" other-ca

daemon_yaml() {  # NAME AGENT_LISTEN INTERVAL [EXTRA YAML]
  cat <<EOF
watch:
  agents:
    include: ["/nonexistent/*.jar"]
collection:
  interval: $3
  pause_budget: 1
  discovery_interval: 1s
trend:
  min_growth_bytes: 262144
escalation:
  enabled: true
  auto: true
  min_dump_interval: 1h
  join_window: 5s
  dump_dir: $tmp/dumps-$1
  dump_timeout: 60s
  keep_raw_dumps: false
agents:
  listen: "$2"
  heartbeat_interval: 1s
  port_file: $tmp/d-$1/agent.port
${4:-}
EOF
}
daemon_yaml unix "unix:$tmp/run/agent.sock" 1s >"$tmp/unix.yml"
daemon_yaml tcp "127.0.0.1:0" 1s "auth:
  tokens_file: $tmp/tokens" >"$tmp/tcp.yml"
# The TLS daemons' client-certificate roles and server certificate (the end of their auth: section).
certificates_yaml="  client_certificates:
    e2e-agent-mtls: agent
    e2e-reader: read
tls:
  cert_file: $tmp/pki/server.pem
  key_file: $tmp/pki/server.key
  client_ca_file: $tmp/pki/ca.pem"
daemon_yaml tls "127.0.0.1:0" 1h "auth:
  tokens_file: $tmp/tokens
$certificates_yaml" >"$tmp/tls.yml"
# No tokens file: client certificates are the only credential, so the handshake requires one.
daemon_yaml mtls "127.0.0.1:0" 1h "auth:
$certificates_yaml" >"$tmp/mtls.yml"

declare -A dpid gport
start_daemon() {  # NAME
  local name=$1
  rm -f "$tmp/d-$name/grpc.port" "$tmp/d-$name/metrics.port"
  "$heapwatchd" --config "$tmp/$name.yml" --data-dir "$tmp/d-$name/data" --grpc-listen 127.0.0.1:0 \
    --metrics-listen 127.0.0.1:0 --grpc-port-file "$tmp/d-$name/grpc.port" \
    --metrics-port-file "$tmp/d-$name/metrics.port" >>"$tmp/heapwatchd-$name.log" 2>&1 &
  dpid[$name]=$!
  pids+=("${dpid[$name]}")
  gport[$name]=$(wait_port_file "$tmp/d-$name/grpc.port" 30) || fail "heapwatchd $name did not start"
}
tls_ctl_options=(--tls-ca "$tmp/pki/ca.pem")  # the tls daemon's query listener: its certificate checked
ctl() {  # NAME ARGS... (tcp and tls with the admin token, mtls with the read-mapped certificate)
  local name=$1
  shift
  local auth=()
  [[ $name == tcp ]] && auth=(--token-file "$tmp/admin.secret")
  [[ $name == tls ]] && auth=("${tls_ctl_options[@]}" --token-file "$tmp/admin.secret")
  [[ $name == mtls ]] && auth=("${tls_ctl_options[@]}" --tls-cert "$tmp/pki/reader.pem" --tls-key "$tmp/pki/reader.key")
  "$heapwatchctl" --server "127.0.0.1:${gport[$name]}" --timeout 10s "${auth[@]}" "$@"
}
metric() {  # NAME SAMPLE
  local port
  port=$(cat "$tmp/d-$1/metrics.port")
  local auth=()
  [[ $1 != unix ]] && auth=(-H "Authorization: Bearer $(cat "$tmp/read.secret")")
  curl -sf "${auth[@]}" "http://127.0.0.1:$port/metrics" |
    awk -v k="$2" '$1 == k { printf "%d\n", $2; found = 1 } END { if (!found) print -1 }'
}

start_daemon unix
start_daemon tcp
start_daemon tls
start_daemon mtls
agent_port=$(wait_port_file "$tmp/d-tcp/agent.port" 30) || fail "the tcp daemon wrote no agent port"
tls_port=$(wait_port_file "$tmp/d-tls/agent.port" 30) || fail "the tls daemon wrote no agent port"
mtls_port=$(wait_port_file "$tmp/d-mtls/agent.port" 30) || fail "the mtls daemon wrote no agent port"
log "daemons up: unix gRPC ${gport[unix]}, tcp gRPC ${gport[tcp]} (agents on 127.0.0.1:$agent_port)," \
  "tls gRPC ${gport[tls]} (agents on 127.0.0.1:$tls_port), mtls gRPC ${gport[mtls]} (agents on $mtls_port)"

declare -A jpid
start_jvm() {  # APP AGENT_OPTIONS [PROGRAM ARGUMENTS...]
  local app=$1 options=$2
  shift 2
  java "-agentpath:$agent_so=$options" -Xmx256m -jar "$tmp/jar/$app.jar" --max-seconds 240 "$@" \
    >"$tmp/$app.log" 2>&1 &
  jpid[$app]=$!
  pids+=("${jpid[$app]}")
}
start_jvm UnixApp "address=unix:$tmp/run/agent.sock,label.e2e=unix"
start_jvm TcpApp "address=127.0.0.1:$agent_port,token_file=$tmp/agent.secret,label.e2e=tcp"
start_jvm BadApp "address=127.0.0.1:$agent_port,token_file=$tmp/wrong.secret"
tls_agent="address=127.0.0.1:$tls_port,tls_ca=$tmp/pki"
steady=(--live-mb 8 --garbage-kb-per-second 64)
start_jvm TlsApp "$tls_agent/ca.pem,token_file=$tmp/agent.secret,label.e2e=tls" "${steady[@]}"
start_jvm MtlsApp "$tls_agent/ca.pem,tls_cert=$tmp/pki/mtls.pem,tls_key=$tmp/pki/mtls.key,label.e2e=mtls" \
  "${steady[@]}"
start_jvm WrongCaApp "$tls_agent/other-ca.pem,token_file=$tmp/agent.secret" "${steady[@]}"
for who in Stranger Reader; do
  cert=$tmp/pki/${who,,}
  start_jvm "${who}App" "$tls_agent/ca.pem,tls_cert=$cert.pem,tls_key=$cert.key" "${steady[@]}"
done
mtls_agent="address=127.0.0.1:$mtls_port,tls_ca=$tmp/pki/ca.pem"
start_jvm CertOnlyApp "$mtls_agent,tls_cert=$tmp/pki/mtls.pem,tls_key=$tmp/pki/mtls.key" "${steady[@]}"
start_jvm NoCertApp "$mtls_agent,token_file=$tmp/agent.secret" "${steady[@]}"

agent_of() {  # DAEMON PID: the agent id of that JVM in the daemon's list when it is registered
  ctl "$1" --json agents 2>/dev/null |
    jq -r --argjson p "$2" '.agents[]? | select((.pid | tonumber) == $p and .kind == "registered") | .agent'
}
declare -A agent
for pair in unix:UnixApp tcp:TcpApp tls:TlsApp tls:MtlsApp mtls:CertOnlyApp; do
  d=${pair%%:*} app=${pair#*:}
  for _ in $(seq 150); do
    agent[$app]=$(agent_of "$d" "${jpid[$app]}")
    [[ -n ${agent[$app]} ]] && break
    sleep 0.2
  done
  [[ -n ${agent[$app]} ]] || fail "$app (pid ${jpid[$app]}) is not listed as registered by the $d daemon"
  log "$app registered with the $d daemon as ${agent[$app]}"
done

# ---- 1. The refused agent: one log line, the JVM runs on, the daemon counts it, nobody lists it.
sleep 2
kill -0 "${jpid[BadApp]}" 2>/dev/null || fail "BadApp exited after its agent was refused"
bad_lines=$(grep -c '^heapwatch-agent:' "$tmp/BadApp.log" || true)
((bad_lines == 1)) || fail "BadApp's agent logged $bad_lines lines, expected exactly 1"
refused=$(metric tcp 'heapwatch_auth_failures_total{reason="unknown_credential"}')
((refused >= 1)) || fail "the tcp daemon counted no unknown_credential refusal ($refused)"
for d in unix tcp; do
  [[ -z $(agent_of "$d" "${jpid[BadApp]}") ]] || fail "the $d daemon lists BadApp"
done
log "BadApp refused: one line ($(grep -m1 '^heapwatch-agent:' "$tmp/BadApp.log" | cut -c1-120)), $refused refusals counted"

# ---- 4. Refusals on the query API of the tcp daemon.
if out=$("$heapwatchctl" --server "127.0.0.1:${gport[tcp]}" --timeout 5s agents 2>&1); then
  fail "a client without a token was served by the tcp daemon"
fi
grep -q UNAUTHENTICATED <<<"$out" || fail "no UNAUTHENTICATED for a client without a token: $out"
if out=$("$heapwatchctl" --server "127.0.0.1:${gport[tcp]}" --timeout 5s --token-file "$tmp/read.secret" \
  dump "${agent[TcpApp]}" 2>&1); then
  fail "a read token triggered an extended dump"
fi
grep -q PERMISSION_DENIED <<<"$out" || fail "no PERMISSION_DENIED for a read token's dump request: $out"
log "query API: no token UNAUTHENTICATED, read token's dump PERMISSION_DENIED"

# ---- 6. TLS: the token and the client certificate agents registered (above), quietly; the others refused.
for app in TlsApp MtlsApp CertOnlyApp; do
  lines=$(grep -c '^heapwatch-agent:' "$tmp/$app.log" || true)
  ((lines == 0)) || fail "$app's agent logged: $(grep -m1 '^heapwatch-agent:' "$tmp/$app.log")"
done
tls_refused() {  # APP REASON: the JVM runs on, its agent logged one line naming REASON, no daemon lists it
  local app=$1 reason=$2 lines grpc_lines
  for _ in $(seq 75); do  # its first refusal came long ago on a quiet machine; 15 s for a loaded one
    grep -q '^heapwatch-agent:' "$tmp/$app.log" && break
    sleep 0.2
  done
  kill -0 "${jpid[$app]}" 2>/dev/null || fail "$app exited after its agent was refused"
  lines=$(grep -c '^heapwatch-agent:' "$tmp/$app.log" || true)
  ((lines == 1)) || fail "$app's agent logged $lines lines, expected exactly 1"
  grep '^heapwatch-agent:' "$tmp/$app.log" | grep -q "$reason" ||
    fail "$app's agent line does not say $reason: $(grep -m1 '^heapwatch-agent:' "$tmp/$app.log")"
  # Nothing else reaches the JVM's stderr: gRPC core's own lines ("E1125 05:59:57.469 12089
  # ssl_transport_security.cc:1501] Handshake failed ..."), one per reconnect, are dropped by the agent.
  grpc_lines=$(grep -cE '^[DIE][0-9]{4} .*\.cc:[0-9]+\]' "$tmp/$app.log" || true)
  ((grpc_lines == 0)) ||
    fail "$app's stderr has $grpc_lines gRPC log lines: $(grep -m1 -E '\.cc:[0-9]+\]' "$tmp/$app.log")"
  for d in unix tcp tls mtls; do
    [[ -z $(agent_of "$d" "${jpid[$app]}") ]] || fail "the $d daemon lists $app"
  done
  log "$app refused: $(grep -m1 '^heapwatch-agent:' "$tmp/$app.log" | cut -c1-150)"
}
tls_refused WrongCaApp 'certificate verify failed'
tls_refused StrangerApp UNAUTHENTICATED
tls_refused ReaderApp PERMISSION_DENIED
tls_refused NoCertApp UNAVAILABLE  # the daemon requires a certificate: it closes the connection
for reason in unmapped_certificate wrong_role; do
  n=$(metric tls "heapwatch_auth_failures_total{reason=\"$reason\"}")
  ((n >= 1)) || fail "the tls daemon counted no $reason refusal ($n)"
done
log "TLS: TlsApp (token), MtlsApp and CertOnlyApp (client certificates) registered, the others refused"

# ---- 7. Histogram now through the tls daemon: stored once, in the mode asked for, before collect returns.
snapshot_count() {  # the tls daemon's stored snapshots
  ctl tls --json store | jq -r '[.kinds[] | select(.kind == "snapshots") | (.records // 0 | tonumber)] | add // 0'
}
string_points() {  # AGENT: "time mode" of each java.lang.String point, oldest first
  { ctl tls --json history "$1" java.lang.String 2>/dev/null || echo '{}'; } |
    jq -r '.points[]? | "\(.time) \(.mode)"' | sort
}
collect_once() {  # APP MODE
  local app=$1 mode=$2 id=${agent[$1]} before points_before commits_before out time got after points commits
  before=$(snapshot_count)
  points_before=$(string_points "$id" | wc -l)
  commits_before=$(metric tls heapwatch_store_commits_total)
  out=$(ctl tls --json collect "$id" --mode "$mode") || fail "collect $app --mode $mode failed: $out"
  time=$(jq -r .time <<<"$out")
  got=$(jq -r .mode <<<"$out")
  [[ $got == "HISTOGRAM_MODE_${mode^^}" ]] || fail "collect $app --mode $mode returned mode $got: $out"
  after=$(snapshot_count)
  ((after == before + 1)) || fail "collect $app --mode $mode: snapshots $before -> $after, expected +1"
  points=$(string_points "$id")
  (($(wc -l <<<"$points") == points_before + 1)) ||
    fail "collect $app --mode $mode: java.lang.String points $points_before -> $(wc -l <<<"$points")"
  [[ $(tail -1 <<<"$points") == "$time $mode" ]] ||
    fail "collect $app --mode $mode: newest stored point '$(tail -1 <<<"$points")', expected '$time $mode'"
  commits=$(metric tls heapwatch_store_commits_total)
  ((commits_before >= 0 && commits > commits_before)) ||
    fail "heapwatch_store_commits_total did not rise over collect $app ($commits_before -> $commits)"
  log "collect $app --mode $mode: stored at $time, snapshots $before -> $after," \
    "store commits $commits_before -> $commits"
}
collect_once TlsApp all
collect_once TlsApp live
collect_once MtlsApp live
before=$(snapshot_count)
if out=$("$heapwatchctl" --server "127.0.0.1:${gport[tls]}" --timeout 10s "${tls_ctl_options[@]}" \
  --token-file "$tmp/read.secret" collect "${agent[TlsApp]}" 2>&1); then
  fail "a read token collected a histogram"
fi
grep -q PERMISSION_DENIED <<<"$out" || fail "no PERMISSION_DENIED for a read token's collect: $out"
(($(snapshot_count) == before)) || fail "a refused collect stored a snapshot"
log "collect with a read token: PERMISSION_DENIED, nothing stored"
for app in TlsApp MtlsApp WrongCaApp StrangerApp ReaderApp CertOnlyApp NoCertApp; do kill "${jpid[$app]}"; done
kill "${dpid[tls]}" "${dpid[mtls]}"

# ---- 2. Leak, automatic dump through the agent, report naming the accumulation point and static CACHE.
leak_of() {  # DAEMON AGENT: the id of the agent's leak
  ctl "$1" --json leaks --agent "$2" 2>/dev/null | jq -r '.leaks[0]?.leak // empty'
}
done_dumps() {  # DAEMON AGENT
  ctl "$1" --json reports "$2" 2>/dev/null |
    jq -r '(.dumps // .extendedDumps // .extended_dumps)[]? | select(.state | test("DONE")) | (.dumpId // .dump_id)'
}
declare -A leak
for pair in unix:UnixApp tcp:TcpApp; do
  d=${pair%%:*} app=${pair#*:}
  for _ in $(seq 450); do
    leak[$app]=$(leak_of "$d" "${agent[$app]}")
    [[ -n ${leak[$app]} && -n $(done_dumps "$d" "${agent[$app]}") ]] && break
    sleep 0.2
  done
  [[ -n ${leak[$app]} ]] || fail "no leak for $app within 90 s"
  [[ -n $(done_dumps "$d" "${agent[$app]}") ]] || {
    ctl "$d" reports "${agent[$app]}" >&2 || true
    fail "no DONE extended dump of $app (through its agent) within 90 s"
  }
  report=$(ctl "$d" report "${agent[$app]}" "${leak[$app]}")
  grep -q 'static CACHE' <<<"$report" || { echo "$report" >&2; fail "$app's report does not name static CACHE"; }
  grep -q 'Accumulation point 1 of' <<<"$report" || { echo "$report" >&2; fail "$app's report has no accumulation point"; }
  grep -m1 'Accumulation point 1 of' <<<"$report" | grep -q 'java.util.HashMap' ||
    { echo "$report" >&2; fail "$app's accumulation point is not the HashMap"; }
  log "$app: leak ${leak[$app]}, dump $(done_dumps "$d" "${agent[$app]}" | head -1) through the agent;" \
    "$(grep -m1 'Accumulation point 1 of' <<<"$report" | cut -c1-100)"
done

# ---- 3. No raw dump left on either side.
left=$(find "$tmp/dumps-unix" "$tmp/dumps-tcp" -type f | head -5)
[[ -z $left ]] || fail "raw dumps left in the daemons' dump directories: $left"
for app in UnixApp TcpApp; do
  if compgen -G "/tmp/heapwatch-agent-${jpid[$app]}-*" >/dev/null; then
    fail "$app's agent left $(compgen -G "/tmp/heapwatch-agent-${jpid[$app]}-*")"
  fi
done
log "no raw dump left on either side"

# ---- 5. SIGKILL of the unix daemon while the agent runs; buffered histograms delivered once.
cls=$(ctl unix --json leaks --agent "${agent[UnixApp]}" | jq -r '.leaks[0].main_class // empty')
[[ -n $cls ]] || cls='byte[]'
before=$(ctl unix --json history "${agent[UnixApp]}" "$cls" | jq -r '.points | length')
kill -9 "${dpid[unix]}"
wait "${dpid[unix]}" 2>/dev/null || true
killed_at=$(date +%s)
sleep 3
start_daemon unix
for _ in $(seq 150); do
  [[ -n $(agent_of unix "${jpid[UnixApp]}") ]] && break
  sleep 0.2
done
[[ -n $(agent_of unix "${jpid[UnixApp]}") ]] || fail "UnixApp did not register again after the daemon restart"
sleep 4
times=$(ctl unix --json history "${agent[UnixApp]}" "$cls" | jq -r '.points[].time' | sort)
dups=$(uniq -d <<<"$times" | wc -l)
((dups == 0)) || fail "$dups histogram times stored twice"
# The largest hole between consecutive histograms from 5 s before the kill on.
hole=$(while read -r t; do date -d "$t" +%s.%N; done <<<"$times" |
  awk -v from=$((killed_at - 5)) '$1 >= from { if (prev) { d = $1 - prev; if (d > m) m = d } prev = $1 }
    END { printf "%.1f\n", m }')
awk -v h="$hole" 'BEGIN { exit !(h <= 2.5) }' ||
  fail "a hole of ${hole} s in the histograms around the daemon's SIGKILL (buffered ones not delivered)"
after=$(wc -l <<<"$times")
duplicates=$(metric unix 'heapwatch_agent_deliveries_total{result="duplicate"}')
gaps=$(metric unix 'heapwatch_agent_delivery_gaps_total')
((gaps <= 0)) || fail "the restarted daemon counted $gaps sequence gaps"
log "SIGKILL + restart: $before -> $after histograms of $cls, no duplicate time, largest hole ${hole} s," \
  "duplicate deliveries acknowledged and dropped: $duplicates, gaps: $gaps"

ok=1
echo "PASS: registered agents"
