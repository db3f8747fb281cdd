# Shared by the shell end-to-end tests (tests/e2e/cost_e2e.sh, tests/dashboards/prometheus_e2e.sh): a
# temporary directory, processes killed on every exit path, logs shown on failure, a timeline.
# Source it after `set -euo pipefail`; it sets:
#   tmp      a fresh directory (prefix $1), removed on exit unless HEAPWATCH_E2E_KEEP=1
#   pids     append the pid of every background process: each gets SIGTERM, then SIGKILL after 5 s
#   ok       set to 1 once the test passed (otherwise the last lines of every $tmp/*.log are printed)
# and the functions fail MESSAGE, log MESSAGE (prefixed by the seconds since t_start_ms), elapsed and
# wait_port_file FILE SECONDS (prints the port a daemon wrote to FILE); further down, helpers for real
# application servers, for one daemon restarted on one store, and pki_ca / pki_cert (test certificates).
e2e_prefix=${1:?usage: source e2e_lib.sh PREFIX}
tmp=$(mktemp -d -t "$e2e_prefix.XXXXXX")
pids=()
ok=0
e2e_log_lines=${E2E_LOG_LINES:-30}
cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if ((ok == 0)); then
    for log in "$tmp"/*.log; do
      [[ -f $log ]] || continue
      echo "---- last lines of $(basename "$log")" >&2
      tail -n "$e2e_log_lines" "$log" >&2
    done
  fi
  if [[ ${HEAPWATCH_E2E_KEEP:-0} == 1 ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
t_start_ms=$(date +%s%3N)
# Seconds since t_start_ms, with one decimal.
elapsed() {
  local ms=$(($(date +%s%3N) - t_start_ms))
  printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}
log() { echo "[$(elapsed)s] $*"; }

# Waits up to $2 seconds for file $1 to hold a port number; prints it.
wait_port_file() {
  local file=$1 limit=$2
  for _ in $(seq $((limit * 10))); do
    if [[ -s $file ]] && grep -qE '^[0-9]+$' "$file"; then cat "$file"; return 0; fi
    sleep 0.1
  done
  return 1
}

# ---- Real application servers (tests/e2e/realapp_e2e.sh, tests/e2e/realapp/redeploy_e2e.sh) -------------
# free_port NAME: sets port[NAME] to a free loopback port, a random one below the ephemeral range that nothing
# answers on and that this run has not handed out yet (not in a subshell: used_ports must persist).
declare -A port pid_of
used_ports=" "
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

# tomcat_launch NAME BASE JVM_OPTION...: starts Debian's Tomcat 10 (/usr/share/tomcat10) on the prepared
# CATALINA_BASE directory BASE in the background, as `java -jar BASE/tomcat.jar` (a launcher jar whose manifest
# names Tomcat's Bootstrap and jars, so that heapwatchd sees "BASE/tomcat.jar" as the main class), with the
# options catalina.sh run passes for Tomcat 10.1 on Java 17 after the given ones. Output goes to $tmp/NAME.log;
# sets pid_of[NAME] and adds the pid to pids.
tomcat_launch() {
  local name=$1 base=$2 home=/usr/share/tomcat10
  shift 2
  printf 'Main-Class: org.apache.catalina.startup.Bootstrap\nClass-Path: %s %s\n' \
    "$home/bin/bootstrap.jar" "$home/bin/tomcat-juli.jar" >"$base/launcher.mf"
  jar --create --file "$base/tomcat.jar" --manifest "$base/launcher.mf"
  (cd "$base" && exec java "$@" \
    -Djava.util.logging.config.file="$base/conf/logging.properties" \
    -Djava.util.logging.manager=org.apache.juli.ClassLoaderLogManager \
    -Djdk.tls.ephemeralDHKeySize=2048 -Djava.protocol.handler.pkgs=org.apache.catalina.webresources \
    -Dorg.apache.catalina.security.SecurityListener.UMASK=0027 \
    --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED \
    --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED \
    --add-opens=java.base/java.util.concurrent=ALL-UNNAMED --add-opens=java.rmi/sun.rmi.transport=ALL-UNNAMED \
    -Dcatalina.base="$base" -Dcatalina.home="$home" -Djava.io.tmpdir="$base/temp" \
    -jar "$base/tomcat.jar" start) >"$tmp/$name.log" 2>&1 </dev/null &
  pid_of[$name]=$!
  pids+=("${pid_of[$name]}")
}

# tomcat_shop NAME MODE REALAPP_DIR CLASSES_DIR JVM_OPTION...: a CATALINA_BASE in $tmp/NAME (the package's
# /etc/tomcat10 with a free loopback port, no shutdown port, no session persistence, no other webapps) with
# the shop webapp of REALAPP_DIR/tomcat (its classes compiled into CLASSES_DIR) at /shop, in MODE leak
# (sessions never expire) or healthy, started with tomcat_launch. Sets port[NAME], pid_of[NAME] and
# url[NAME] (the cart's URL; the caller declares `url` as an associative array).
tomcat_shop() {
  local name=$1 mode=$2 src=$3 classes=$4 base=$tmp/$1 timeout=30
  shift 4
  [[ $mode == leak ]] && timeout=-1
  mkdir -p "$base"/{logs,temp,work,webapps/shop/WEB-INF}
  cp -r /etc/tomcat10 "$base/conf"
  rm -rf "$base/conf/Catalina"
  free_port "$name"
  sed -i -e "s/<Connector port=\"8080\"/<Connector address=\"127.0.0.1\" port=\"${port[$name]}\"/" \
         -e 's/<Server port="8005"/<Server port="-1"/' "$base/conf/server.xml"
  grep -q "port=\"${port[$name]}\"" "$base/conf/server.xml" || fail "could not set the HTTP port in server.xml"
  sed -i 's#^<Context>#<Context>\n    <Manager pathname="" />#' "$base/conf/context.xml"
  cp -r "$classes" "$base/webapps/shop/WEB-INF/classes"
  sed -e "s/@MODE@/$mode/g" -e "s/@SESSION_TIMEOUT@/$timeout/g" "$src/tomcat/WEB-INF/web.xml" \
    >"$base/webapps/shop/WEB-INF/web.xml"
  tomcat_launch "$name" "$base" "$@"
  url[$name]=http://127.0.0.1:${port[$name]}/shop/cart
}

# jetty_pages NAME MODE REALAPP_DIR CLASSES_DIR JVM_OPTION...: a JETTY_BASE in $tmp/NAME (modules server,
# http, deploy of Debian's Jetty 9, /usr/share/jetty9) with the product pages webapp of REALAPP_DIR/jetty (its
# classes compiled into CLASSES_DIR) at /pages, in MODE leak (pages cached in a static map without eviction)
# or healthy (an LRU map of 1000 pages), started as `java -jar $tmp/NAME/jetty.jar` (a launcher jar naming
# Jetty's start Main) in the background, output in $tmp/NAME.log. Sets port[NAME], pid_of[NAME] (added to
# pids) and url[NAME] (the caller declares `url` as an associative array).
jetty_pages() {
  local name=$1 mode=$2 src=$3 classes=$4 base=$tmp/$1 home=/usr/share/jetty9
  shift 4
  mkdir -p "$base"/{tmp,webapps/pages/WEB-INF}
  free_port "$name"
  printf -- '--module=server,http,deploy\njetty.http.host=127.0.0.1\njetty.http.port=%s\njetty.deploy.scanInterval=0\n' \
    "${port[$name]}" >"$base/start.ini"
  cp -r "$classes" "$base/webapps/pages/WEB-INF/classes"
  sed -e "s/@MODE@/$mode/g" "$src/jetty/WEB-INF/web.xml" >"$base/webapps/pages/WEB-INF/web.xml"
  printf 'Main-Class: org.eclipse.jetty.start.Main\nClass-Path: %s\n' "$home/start.jar" >"$base/launcher.mf"
  jar --create --file "$base/jetty.jar" --manifest "$base/launcher.mf"
  (cd "$base" && exec java "$@" -Djetty.home="$home" -Djetty.base="$base" \
    -Djava.io.tmpdir="$base/tmp" -jar "$base/jetty.jar") >"$tmp/$name.log" 2>&1 </dev/null &
  pid_of[$name]=$!
  pids+=("${pid_of[$name]}")
  url[$name]=http://127.0.0.1:${port[$name]}/pages/product
}

# wait_http SECONDS QUERY NAME...: until each server NAME answers GET ${url[NAME]}?QUERY with a 2xx; fails when
# one exits (pid_of[NAME]) or SECONDS pass.
wait_http() {
  local seconds=$1 query=$2 n deadline
  shift 2
  deadline=$(($(date +%s) + seconds))
  for n in "$@"; do
    until curl -fs -o /dev/null "${url[$n]}?$query"; do
      kill -0 "${pid_of[$n]}" 2>/dev/null || fail "$n exited at start-up; see $n.log"
      (($(date +%s) < deadline)) || fail "$n does not answer ${url[$n]} within $seconds s"
      sleep 0.5
    done
  done
}

# start_prometheus RULES_YML METRICS_PORT: Prometheus on a free loopback port scraping heapwatchd's metrics on
# 127.0.0.1:METRICS_PORT and evaluating RULES_YML (an absolute path, loaded unmodified), both every 15 s (a
# common production setting; Prometheus' own default is 1m), with a TSDB in $tmp/tsdb and its log in
# $tmp/prometheus.log. Sets prom_url once /-/ready answers (five attempts on other ports if it does not start)
# and adds its pid to pids.
start_prometheus() {
  local rules=$1 metrics_port=$2 prom_pid attempt
  prom_url=''
  for attempt in 1 2 3 4 5; do
    free_port prometheus
    cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 15s
  evaluation_interval: 15s
rule_files:
  - $rules
scrape_configs:
  - job_name: heapwatch
    static_configs:
      - targets: ['127.0.0.1:$metrics_port']
EOF
    promtool check config "$tmp/prometheus.yml" >/dev/null || fail "promtool check config failed"
    prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
      --web.listen-address="127.0.0.1:${port[prometheus]}" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
    prom_pid=$!
    for _ in $(seq 100); do
      if curl -sf "http://127.0.0.1:${port[prometheus]}/-/ready" >/dev/null 2>&1; then
        prom_url="http://127.0.0.1:${port[prometheus]}"
        break
      fi
      kill -0 "$prom_pid" 2>/dev/null || break
      sleep 0.2
    done
    if [[ -n $prom_url ]]; then pids+=("$prom_pid"); return 0; fi
    kill "$prom_pid" 2>/dev/null || true
    wait "$prom_pid" 2>/dev/null || true
    log "prometheus attempt $attempt on port ${port[prometheus]} failed, retrying"
  done
  fail "prometheus did not start"
}

# start_heapwatchd BIN DIR [NAME]: writes DIR/heapwatchd.yml (data in DIR/data, gRPC and metrics on loopback
# ports written to DIR/grpc.port and DIR/metrics.port) followed by the YAML on stdin, starts BIN on it in the
# background (log $tmp/NAME.log, default heapwatchd), adds its pid to pids and sets hw_pid; then waits up to
# 30 s for its gRPC port and sets grpc. Starting it again on the same DIR keeps the data.
start_heapwatchd() {
  local bin=$1 dir=$2 name=${3:-heapwatchd}
  mkdir -p "$dir/data"
  rm -f "$dir/grpc.port" "$dir/metrics.port"
  {
    printf 'data_dir: %s\ngrpc_listen: 127.0.0.1:0\nmetrics_listen: 127.0.0.1:0\n' "$dir/data"
    printf 'grpc_port_file: %s\nmetrics_port_file: %s\n' "$dir/grpc.port" "$dir/metrics.port"
    cat
  } >"$dir/heapwatchd.yml"
  "$bin" --config "$dir/heapwatchd.yml" >"$tmp/$name.log" 2>&1 &
  hw_pid=$!
  pids+=("$hw_pid")
  grpc=$(wait_port_file "$dir/grpc.port" 30) || fail "heapwatchd wrote no gRPC port (see $name.log)"
}

# ---- One heapwatchd restarted on one store (tests/e2e/crash_torture.sh, tests/e2e/fault_injection.sh) ----
# hw_start_daemon HEAPWATCHD HEAPWATCHCTL CONFIG DATA_DIR: starts HEAPWATCHD on CONFIG and DATA_DIR with
# gRPC and metrics on free loopback ports (log appended to $tmp/heapwatchd.log), adds its pid to pids and
# sets hw_daemon_pid, then waits up to 30 s for both ports and sets hw_grpc_port, hw_metrics_port and the
# array hw_ctl (HEAPWATCHCTL on that server, 5 s timeout). Fails the test when the daemon does not come up.
hw_start_daemon() {
  local bin=$1 ctl_bin=$2 config=$3 data=$4
  rm -f "$tmp/grpc.port" "$tmp/metrics.port"
  "$bin" --config "$config" --data-dir "$data" --grpc-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --grpc-port-file "$tmp/grpc.port" --metrics-port-file "$tmp/metrics.port" >>"$tmp/heapwatchd.log" 2>&1 &
  hw_daemon_pid=$!
  pids+=("$hw_daemon_pid")
  hw_grpc_port=$(wait_port_file "$tmp/grpc.port" 30) || fail "heapwatchd did not start (see heapwatchd.log)"
  hw_metrics_port=$(wait_port_file "$tmp/metrics.port" 30) || fail "heapwatchd did not serve /metrics"
  hw_ctl=("$ctl_bin" --server "127.0.0.1:$hw_grpc_port" --timeout 5s)
}
# hw_metric NAME_WITH_LABELS: the value of one sample of the running daemon's /metrics (integer part), or
# -1 when it is not exported.
hw_metric() {
  curl -sf "http://127.0.0.1:$hw_metrics_port/metrics" |
    awk -v k="$1" '$1 == k { printf "%d\n", $2; found = 1 } END { if (!found) print -1 }'
}
# hw_history_times AGENT CLASS: the snapshot times of CLASS (RFC 3339, sorted, one a line); none when the
# agent or class has no snapshot (retention may have deleted every one).
hw_history_times() {
  { "${hw_ctl[@]}" --json history "$1" "$2" 2>/dev/null || echo '{}'; } | jq -r '.points[]?.time' | sort
}
# hw_dump_states AGENT: "id state" lines of the agent's extended dumps, sorted by id (= by request time).
hw_dump_states() {
  "${hw_ctl[@]}" --json reports "$1" | jq -r '(.dumps // .extendedDumps // .extended_dumps)[]? |
    "\(.dumpId // .dump_id) \(.state)"' | sort
}
# Wall-clock bounds of the daemon's speed scale with HEAPWATCH_TIME_SCALE (an integer >= 1; 1 when unset):
# scripts/sanitize.sh exports 3 under ASan, whose instrumented daemon and CLI run several times slower.
# hw_scaled SECONDS prints SECONDS times that factor.
hw_time_scale=${HEAPWATCH_TIME_SCALE:-1}
[[ $hw_time_scale =~ ^[1-9][0-9]{0,2}$ ]] || hw_time_scale=1
hw_scaled() { echo $(($1 * hw_time_scale)); }
# hw_wait_until SECONDS COMMAND...: runs COMMAND every 0.2 s until it succeeds; fails (returns 1) after
# SECONDS.
hw_wait_until() {
  local limit=$1
  shift
  local end=$((SECONDS + limit))
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.2
  done
}

# ---- Certificates (docs/security.md, "Creating a CA and certificates with openssl": the same recipe) ------
# pki_ca DIR NAME: a self-signed P-256 CA, DIR/NAME.key and DIR/NAME.pem, valid for a day.
pki_ca() {
  mkdir -p "$1"
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj "/CN=heapwatch e2e $2" -keyout "$1/$2.key" -out "$1/$2.pem" 2>/dev/null ||
    fail "openssl could not make the CA $2"
}
# pki_cert DIR CA NAME CN server|client: DIR/NAME.key and DIR/NAME.pem signed by DIR/CA.{pem,key}; a
# server certificate names DNS:localhost and IP:127.0.0.1 (extendedKeyUsage serverAuth), a client
# certificate is named by its CN (clientAuth).
pki_cert() {
  local dir=$1 ca=$2 name=$3 cn=$4 ext
  case $5 in
    server) ext='subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' ;;
    client) ext='extendedKeyUsage=clientAuth\n' ;;
    *) fail "pki_cert: kind $5 is neither server nor client" ;;
  esac
  # shellcheck disable=SC2059
  printf "$ext" >"$dir/$name.ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null ||
    fail "openssl could not make the key of the $5 certificate $name"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/$ca.pem" -CAkey "$dir/$ca.key" -CAcreateserial \
    -days 1 -extfile "$dir/$name.ext" -out "$dir/$name.pem" 2>/dev/null ||
    fail "openssl could not sign the $5 certificate $name"
  chmod 600 "$dir/$name.key"
}
