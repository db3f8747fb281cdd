# Shared by the shell end-to-end tests (tests/e2e/cost_e2e.sh, tests/dashboards/prometheus_e2e.sh): a
# temporary directory, processes killed on every exit path, logs shown on failure, a timeline.
# Source it after `set -euo pipefail`; it sets:
#   tmp      a fresh directory (prefix $1), removed on exit unless HEAPWATCH_E2E_KEEP=1
#   pids     append the pid of every background process: each gets SIGTERM, then SIGKILL after 5 s
#   ok       set to 1 once the test passed (otherwise the last lines of every $tmp/*.log are printed)
# and the functions fail MESSAGE, log MESSAGE (prefixed by the seconds since t_start_ms), elapsed and
# wait_port_file FILE SECONDS (prints the port a daemon wrote to FILE).
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
