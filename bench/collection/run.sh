#!/usr/bin/env bash
# The collection-cost benchmark of issue 8 ("Watching must cost (almost) nothing"); see README.md here.
# For each live-set size and collector it runs one JVM with bench/collection/java/Workload.java and measures
#   1. the pause of one class histogram in each mode: `-all`, `-all -parallel=N` (at an arbitrary moment,
#      workload running), `-all` right after a natural old-generation collection (G1 mixed or Parallel full
#      GC, seen in the JVM's -Xlog:gc; none is triggered), live (full GC) and live
#      `-parallel=N`; the pause is the change of the JVM's sun.rt.safepointTime counter across the jcmd,
#      with the workload paused so that no young collection falls in the same window, cross-checked
#      against the operation's "Total" in -Xlog:safepoint;
#   2. the workload's throughput in arms in the same JVM, one after the other: no watcher and heapwatchd
#      with its defaults (only watch.agents.include set, to this JVM) alternate in rounds whose order
#      alternates too (none heapwatch, heapwatch none, ...: an ABBA design, so that a linear drift of the
#      machine or the JVM cancels); then the JDK's own default (jcmd GC.class_histogram every 60 s). One
#      heapwatchd runs through all the arms and is stopped (SIGSTOP) outside its own: it keeps its pause
#      budget's state like a daemon that has watched the JVM all along, and costs nothing in the other
#      arms. Its budget accrues over the whole run and is spent only in its arms, so those arms carry up to
#      (all arms' time / its arms' time) x the default pause rate: the measurement errs against heapwatch.
#      Per arm: ops/s, ratio to the no-watcher arm, the paused fraction of wall time (change of
#      sun.rt.safepointTime / wall time); per round the ratio heapwatch / none, and their mean with a 95 %
#      interval over the rounds; the daemon's CPU. The daemon is started after the warm-up and stopped as
#      soon as it lists the JVM, so its budget accrues from then on;
#   3. with HEAPWATCH_BENCH_PROBES=K (before the arms): K histograms as heapwatchd takes them (-all
#      -parallel=N over the attach socket, from one attach client that runs all along, as heapwatchd
#      does) with the workload running, one per probe window, each paired with a control window in which
#      the same client runs a no-op command (VM.version); per histogram the work the workload lost around
#      it against its pause (lost_work.py), with the controls for the attach's own cost and placebo
#      windows for the method's noise: whether a histogram costs the application more than its pause.
# Prints its markdown tables and writes them to $run_dir/results.md (path printed at the end).
#
# Usage: bash bench/collection/run.sh [--quick]
# Environment (defaults; --quick or HEAPWATCH_BENCH_QUICK=1 changes those marked q):
#   HEAPWATCH_BENCH_LIVE_MB="512 2048 8192"   live sets (MiB) to build; -Xms = -Xmx = 2x       (q: 512)
#   HEAPWATCH_BENCH_GCS="G1 Parallel"         collectors
#   HEAPWATCH_BENCH_ARM_SECONDS=120           seconds per throughput arm                      (q: 40)
#   HEAPWATCH_BENCH_ROUNDS=4                  rounds of the none/heapwatch pair (order alternates) (q: 2)
#   HEAPWATCH_BENCH_JDK_ARMS=1                JDK-default arms, after the rounds
#   HEAPWATCH_BENCH_JDK_ARM_SECONDS=<ARM_SECONDS>  seconds per JDK-default arm (a multiple of the JDK interval
#                                             keeps its rate at one histogram per interval)
#   HEAPWATCH_BENCH_PLACEBO=0                 1: heapwatchd stays stopped in its arms too (an A/A control of the
#                                             design: the ratio must then be 1 within its interval)
#   HEAPWATCH_BENCH_REPS=5                    repetitions of each histogram mode               (q: 2)
#   HEAPWATCH_BENCH_NATURAL_REPS=3            histograms after a natural old GC                (q: 1)
#   HEAPWATCH_BENCH_NATURAL_WAIT=300          seconds to wait for each natural old GC          (q: 120)
#   HEAPWATCH_BENCH_WARMUP_SECONDS=30         workload warm-up before anything is measured     (q: 15)
#   HEAPWATCH_BENCH_GAP_SECONDS=10            workload runs this long between two histograms   (q: 5)
#   HEAPWATCH_BENCH_THREADS=$(nproc)          workload threads; -parallel=N uses N=$(nproc) too
#   HEAPWATCH_BENCH_CHURN=0.2                 fraction of the live set the workload replaces per minute
#   HEAPWATCH_BENCH_HOT=0                     requests read only the first N sessions (0: all; README.md "Noise")
#   HEAPWATCH_BENCH_PROBES=10                 histograms like heapwatchd's (-all -parallel=N) taken with the
#                                             workload running, one per probe window, for the lost-work table (q: 4)
#   HEAPWATCH_BENCH_PROBE_SECONDS=20          length of a probe window (the histogram starts 15 s into it; the
#                                             window lasts until at least 5 s after the histogram ends)
#   HEAPWATCH_BENCH_CONTROLS=1                1: every probe window is paired with a control window, a no-op
#                                             command (VM.version) through the same attach client (0: none)
#   HEAPWATCH_BENCH_JDK_INTERVAL=60           the JDK-default arm's histogram interval (seconds)
#   HEAPWATCHD=<repo>/build/daemon/heapwatchd the daemon of the third arm (skipped when missing)
#   HEAPWATCH_BENCH_CACHE=/var/tmp/heapwatch-bench   compiled classes and run directories
#   JAVA_HOME                                 the JDK (java, javac, jcmd) when not the one on PATH
# Needs: java, javac, jcmd (JDK 17+), python3, curl. Only loopback is used.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[[ "${1:-}" == --quick ]] && HEAPWATCH_BENCH_QUICK=1
quick=${HEAPWATCH_BENCH_QUICK:-0}
q() { if [[ $quick == 1 ]]; then echo "$2"; else echo "$1"; fi; }
lives=${HEAPWATCH_BENCH_LIVE_MB:-$(q "512 2048 8192" 512)}
gcs=${HEAPWATCH_BENCH_GCS:-G1 Parallel}
arm_s=${HEAPWATCH_BENCH_ARM_SECONDS:-$(q 120 40)}
rounds=${HEAPWATCH_BENCH_ROUNDS:-$(q 4 2)}
jdk_arms=${HEAPWATCH_BENCH_JDK_ARMS:-1}
jdk_arm_s=${HEAPWATCH_BENCH_JDK_ARM_SECONDS:-$arm_s}
placebo=${HEAPWATCH_BENCH_PLACEBO:-0}
reps=${HEAPWATCH_BENCH_REPS:-$(q 5 2)}
natural_reps=${HEAPWATCH_BENCH_NATURAL_REPS:-$(q 3 1)}
natural_wait=${HEAPWATCH_BENCH_NATURAL_WAIT:-$(q 300 120)}
warmup=${HEAPWATCH_BENCH_WARMUP_SECONDS:-$(q 30 15)}
gap=${HEAPWATCH_BENCH_GAP_SECONDS:-$(q 10 5)}
threads=${HEAPWATCH_BENCH_THREADS:-$(nproc)}
churn=${HEAPWATCH_BENCH_CHURN:-0.2}
hot=${HEAPWATCH_BENCH_HOT:-0}
probes=${HEAPWATCH_BENCH_PROBES:-$(q 10 4)}
probe_s=${HEAPWATCH_BENCH_PROBE_SECONDS:-20}
controls=${HEAPWATCH_BENCH_CONTROLS:-1}
jdk_interval=${HEAPWATCH_BENCH_JDK_INTERVAL:-60}
heapwatchd=${HEAPWATCHD:-$root/build/daemon/heapwatchd}
heapwatchd_sum=""
cache=${HEAPWATCH_BENCH_CACHE:-/var/tmp/heapwatch-bench}
bin=${JAVA_HOME:+$JAVA_HOME/bin/}
par=$(nproc)
run_dir=$cache/collection/$(date -u +%Y%m%dT%H%M%SZ)
classes=$cache/collection/classes
mkdir -p "$run_dir" "$classes"
"${bin}javac" -d "$classes" "$here/java/Workload.java"
log() { echo "collection bench: $*" >&2; }
now_ms() { date +%s%3N; }
hsperf() { python3 "$here/hsperf.py" "$@"; }

if [[ -x "$heapwatchd" ]]; then
  pair="none heapwatch"
  # The binary may be rebuilt while the benchmark runs: every arm runs this copy.
  cp "$heapwatchd" "$run_dir/heapwatchd"
  heapwatchd_sum=$(sha256sum "$heapwatchd" | cut -c1-16)
  heapwatchd=$run_dir/heapwatchd
else
  pair="none"
  log "no heapwatchd at $heapwatchd (set HEAPWATCHD): the heapwatch arm is SKIPPED"
fi
log "run directory $run_dir; live sets (MiB): $lives; collectors: $gcs; arms ($pair) x $rounds round(s), then jdk x $jdk_arms, ${arm_s}s each"
{
  echo "# collection benchmark $(date -u +%FT%TZ)"
  echo "host $(hostname) cpus $(nproc) load $(cut -d' ' -f1-3 /proc/loadavg) java $("${bin}java" -version 2>&1 | head -1)"
  echo "heapwatchd ${HEAPWATCHD:-$root/build/daemon/heapwatchd} ${heapwatchd_sum:-missing}"
  echo "clk_tck $(getconf CLK_TCK)"
  echo "settings lives=[$lives] gcs=[$gcs] arm_s=$arm_s rounds=$rounds reps=$reps natural_reps=$natural_reps" \
    "natural_wait=$natural_wait warmup=$warmup gap=$gap threads=$threads churn=$churn hot=$hot probes=$probes controls=$controls probe_s=$probe_s jdk_interval=$jdk_interval jdk_arms=$jdk_arms jdk_arm_s=$jdk_arm_s placebo=$placebo"
} >"$run_dir/settings.txt"

# --- One JVM at a time; everything it needs is in these globals while it runs. ---
pid=""; dir=""; out=""; hw_pid=""; jdk_loop=""; attach_pid=""; hsperf_pid=""
cleanup() {
  [[ -n "$jdk_loop" ]] && kill "$jdk_loop" 2>/dev/null || true
  [[ -n "$hw_pid" ]] && { kill -CONT "$hw_pid"; kill "$hw_pid"; } 2>/dev/null || true
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
  [[ -n "$attach_pid" ]] && kill "$attach_pid" 2>/dev/null || true
  [[ -n "$hsperf_pid" ]] && kill "$hsperf_pid" 2>/dev/null || true
  exec 3>&- 4>&- 5<&- 6>&- 7<&- 2>/dev/null || true
}
trap cleanup EXIT
trap 'log "failed at line $LINENO: $BASH_COMMAND"' ERR

# wait_line PATTERN N TIMEOUT: waits until the workload's output has more than N lines matching PATTERN.
wait_line() {
  local deadline=$((SECONDS + $3))
  while (( $(grep -c "$1" "$out" || true) <= $2 )); do
    kill -0 "$pid" 2>/dev/null || { log "workload exited; see $dir/workload.err"; exit 1; }
    (( SECONDS < deadline )) || { log "timeout waiting for '$1' in $out"; exit 1; }
    sleep 0.05
  done
}
workload() {  # workload pause|resume: sends the command and waits for its acknowledgement
  local ack=PAUSED; [[ $1 == resume ]] && ack=RESUMED
  local n; n=$(grep -c "^$ack" "$out" || true)
  echo "$1" >&3
  wait_line "^$ack" "$n" 60
}
# hsperf_server start|stop: one hsperf.py serve for the whole run, fed and answered through fifos (fd 6
# and 7): counters() is read at the edges of every window, and a python3 start each time would cost the
# workload about half a second of work right where the windows begin and end.
hsperf_server() {
  if [[ $1 == start ]]; then
    mkfifo "$run_dir/hsperf.in" "$run_dir/hsperf.out"
    python3 "$here/hsperf.py" serve <"$run_dir/hsperf.in" >"$run_dir/hsperf.out" 2>"$run_dir/hsperf.err" &
    hsperf_pid=$!
    exec 6>"$run_dir/hsperf.in" 7<"$run_dir/hsperf.out"
  elif [[ -n $hsperf_pid ]]; then
    exec 6>&- 7<&-
    wait "$hsperf_pid" || true
    hsperf_pid=""
    rm -f "$run_dir/hsperf.in" "$run_dir/hsperf.out"
  fi
}
counters() {  # safepoint ticks, safepoint count, heap used bytes (young + old), old used
  local values
  echo "$pid sun.rt.safepointTime sun.rt.safepoints sun.gc.generation.0.space.0.used" \
    "sun.gc.generation.0.space.1.used sun.gc.generation.0.space.2.used sun.gc.generation.1.space.0.used" >&6
  read -r -t 60 -u 7 values || { log "hsperf.py: no answer within 60 s; see $run_dir/hsperf.err"; exit 1; }
  set -- $values
  [[ $# == 6 && $1 != NA ]] || { log "hsperf.py: '$values'; see $run_dir/hsperf.err"; exit 1; }
  echo "$1 $2 $(($3 + $4 + $5 + $6)) $6"
}

# measure MODE [OPTIONS...]: one histogram with the workload paused; appends to pauses.txt:
# mode ticks safepoints log_total_ns heap_used_before old_used_before jcmd_wall_ms
# Other heapwatchd's on the machine (tests of other checkouts) may attach to this JVM too: a window with
# more than one GC_HeapInspection safepoint is thrown away and measured again (up to 3 times).
measure() {
  local attempt
  for attempt in 1 2 3; do
    measure_once "$@" && return 0
    log "$1: another histogram ran in the same window (a foreign watcher?); measuring again"
    sleep "$gap"
  done
  log "$1: three windows in a row had foreign histograms; keeping the last (see pauses-rejected.txt)"
}
measure_once() {
  local mode=$1; shift
  workload pause
  local before after lines t0 t1 logged
  lines=$(wc -l <"$dir/safepoint.log")
  before=$(counters)
  t0=$(now_ms)
  "${bin}jcmd" "$pid" GC.class_histogram "$@" >"$dir/last-histogram.txt"
  t1=$(now_ms)
  after=$(counters)
  workload resume
  head -c 300 "$dir/last-histogram.txt" | grep -q num || { log "jcmd failed: $(head -3 "$dir/last-histogram.txt")"; exit 1; }
  set -- $(tail -n +$((lines + 1)) "$dir/safepoint.log" |
    awk '/HeapInspection/ { n++; for (i = 1; i < NF; i++) if ($i == "Total:") s += $(i + 1) } END { print n + 0, s + 0 }')
  local inspections=$1 logged=$2
  set -- $before $after
  local row="$mode $(($5 - $1)) $(($6 - $2)) $logged $3 $4 $((t1 - t0))"
  if (( inspections != 1 )); then
    echo "$row inspections=$inspections" >>"$dir/pauses-rejected.txt"
    return 1
  fi
  echo "$row" >>"$dir/pauses.txt"
  log "$(tail -1 "$dir/pauses.txt" | awk -v f="$freq" '{printf "%-12s pause %.3f s (log %.3f s, %d safepoints), heap used %.0f MiB", $1, $2/f, $4/1e9, $3, $5/1048576}')"
}

# wait_natural_gc SECONDS: waits until the JVM logs a collection of its old generation that nobody asked
# for: a G1 mixed collection, or a full GC caused neither by a histogram nor by System.gc(). Prints the log
# line; fails after SECONDS. (The hsperfdata counters cannot tell a G1 mixed pause from a young one, and
# the old generation's used bytes barely move in one mixed pause, which also promotes.)
wait_natural_gc() {
  grep -m1 -E 'Pause Young \(Mixed\)|Pause Full \((Ergonomics|Allocation Failure|G1 Compaction Pause)' \
    <(timeout "$1" tail -n0 -F "$dir/gc.log" 2>/dev/null)
}

jdk_default_loop() {  # one histogram every jdk_interval seconds from $1 (ms) until $2 (ms)
  local start=$1 end=$2 k=0 at
  while :; do
    at=$((start + k * jdk_interval * 1000))
    (( at < end )) || break
    sleep "$(awk -v a="$at" -v n="$(now_ms)" 'BEGIN { d = (a - n) / 1000; print (d > 0 ? d : 0) }')"
    "${bin}jcmd" "$pid" GC.class_histogram >/dev/null || echo "jcmd failed" >&2
    k=$((k + 1))
  done
}

# attach_server start|stop: one attach.py --serve per JVM, fed and answered through fifos (fd 4 and 5; the
# replies are also appended to attach.out), so that a probe costs the attach alone, as heapwatchd's does,
# not a python3 start, and waiting for the reply is a blocking read, not polling beside the workload.
attach_server() {
  if [[ $1 == start ]]; then
    mkfifo "$dir/attach.in" "$dir/attach.reply"
    python3 "$here/attach.py" --serve <"$dir/attach.in" >"$dir/attach.reply" 2>"$dir/attach.err" &
    attach_pid=$!
    exec 4>"$dir/attach.in" 5<"$dir/attach.reply"
    attach_cmd VM.version >/dev/null  # starts the JVM's attach listener before the first probe
  elif [[ -n $attach_pid ]]; then
    exec 4>&- 5<&-
    wait "$attach_pid" || true
    attach_pid=""
    rm -f "$dir/attach.in" "$dir/attach.reply"
  fi
}
attach_cmd() {  # attach_cmd COMMAND: runs it through the server; prints "ok|error START_MS END_MS BYTES"
  local reply
  printf '%s\t%s\n' "$pid" "$*" >&4
  read -r -t 600 -u 5 reply || { log "attach.py: no reply within 600 s; see $dir/attach.err"; exit 1; }
  echo "$reply" >>"$dir/attach.out"
  echo "$reply"
}

# probe KIND ROUND: 15 s into a window, with the workload running, one attach: KIND "probe" runs a
# histogram as heapwatchd takes it (-all -parallel=N), KIND "control" a no-op command (VM.version, no
# safepoint): what the probe's own attach costs the workload. The window lasts probe_s seconds, and at
# least until 5 s after the attach ends (counters() at its edges stays outside lost_work.py's span).
# Appends "KIND ROUND t0 t1 ticks 0 0 attach_start_ms attach_end_ms" to arms.txt.
probe() {
  local kind=$1 round=$2 t0 t1 before after reply command="GC.class_histogram -all -parallel=$par"
  [[ $kind == control ]] && command=VM.version
  before=$(counters)
  t0=$(now_ms)
  sleep 15
  reply=$(attach_cmd "$command")
  set -- $reply
  local status=$1 a0=${2:-0} a1=${3:-0} bytes=${4:-0}
  local end=$((t0 + probe_s * 1000)); (( end >= a1 + 5000 )) || end=$((a1 + 5000))
  local rest=$((end - $(now_ms)))
  (( rest > 0 )) && sleep "$((rest / 1000)).$(printf %03d $((rest % 1000)))"
  t1=$(now_ms)
  after=$(counters)
  set -- $before $after
  echo "$kind $round $t0 $t1 $(($5 - $1)) 0 0 $a0 $a1" >>"$dir/arms.txt"
  [[ $status == ok ]] || log "$kind: attach failed: $reply (see $dir/attach.err)"
  log "$kind $round done ($((a1 - a0)) ms, $bytes bytes)"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # user + system CPU of a process, in clock ticks

start_heapwatchd() {  # one daemon per configuration; it runs only during heapwatch arms (SIGSTOP otherwise)
  "$heapwatchd" --config "$dir/heapwatchd.yaml" --data-dir "$dir/heapwatchd-data" \
    --grpc-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --metrics-port-file "$dir/metrics.port" \
    >"$dir/heapwatchd.log" 2>&1 &
  hw_pid=$!
  local deadline=$((SECONDS + 30))
  until [[ -s $dir/metrics.port ]]; do
    kill -0 "$hw_pid" 2>/dev/null || { log "heapwatchd exited; see $dir/heapwatchd.log"; exit 1; }
    (( SECONDS < deadline )) || { log "heapwatchd did not start; see $dir/heapwatchd.log"; exit 1; }
    sleep 0.1
  done
  # Let it find the JVM before it is stopped: a JVM's pause budget starts empty when the daemon first sees
  # it and accrues from then on, also while the daemon is stopped, as it would for a daemon that ran all
  # along (histograms before the arms, taken while it is stopped, are neither seen nor charged to it).
  deadline=$((SECONDS + 30))
  until curl -s "http://127.0.0.1:$(cat "$dir/metrics.port")/metrics" | grep -q '^heapwatch_agent_info{.*Workload'; do
    (( SECONDS < deadline )) || { log "heapwatchd did not list the workload's JVM within 30 s"; break; }
    sleep 0.5
  done
  kill -STOP "$hw_pid"
}
stop_heapwatchd() {
  [[ -n "$hw_pid" ]] || return 0
  kill -CONT "$hw_pid"
  curl -s "http://127.0.0.1:$(cat "$dir/metrics.port")/metrics" >"$dir/heapwatchd.metrics" || true
  kill -TERM "$hw_pid"; wait "$hw_pid" || log "heapwatchd exited with $?; see $dir/heapwatchd.log"
  hw_pid=""
}

# arm NAME ROUND: runs the workload for arm_s seconds with that watcher; appends to arms.txt:
# name round t0_ms t1_ms ticks other_heapwatchd_processes_at_mid_arm heapwatchd_cpu_ticks
arm() {
  local name=$1 round=$2 t0 t1 before after cpu0=0 cpu1=0 arm_s=$arm_s
  [[ $name == jdk ]] && arm_s=$jdk_arm_s
  before=$(counters)
  t0=$(now_ms)
  if [[ $name == heapwatch ]]; then  # after t0: a histogram it takes at once falls in this arm
    cpu0=$(cpu_ticks "$hw_pid")
    [[ $placebo == 1 ]] || kill -CONT "$hw_pid"
  fi
  if [[ $name == jdk ]]; then
    jdk_default_loop "$t0" "$((t0 + arm_s * 1000))" &
    jdk_loop=$!
  fi
  # Other heapwatchd processes (not this run's) that could watch this JVM; their configs are not checked.
  local foreign
  sleep "$((arm_s / 2))"
  foreign=$(pgrep -x heapwatchd | grep -cvx "${hw_pid:-0}" || true)
  sleep "$((arm_s - arm_s / 2))"
  if [[ $name == heapwatch ]]; then
    kill -STOP "$hw_pid"
    cpu1=$(cpu_ticks "$hw_pid")
    # A histogram it asked for just before the stop still runs in the JVM: let it end in this arm.
    sleep 1
  fi
  t1=$(now_ms)
  after=$(counters)
  if [[ $name == jdk ]]; then wait "$jdk_loop" || true; jdk_loop=""; fi
  set -- $before $after
  echo "$name $round $t0 $t1 $(($5 - $1)) $foreign $((cpu1 - cpu0))" >>"$dir/arms.txt"
  log "arm $name (round $round) done"
}

run_config() {  # run_config LIVE_MB GC
  local live_mb=$1 gc=$2
  local xmx=$((2 * live_mb))
  dir=$run_dir/$gc-$live_mb
  out=$dir/workload.out
  mkdir -p "$dir"
  : >"$dir/pauses.txt"; : >"$dir/arms.txt"
  cat >"$dir/heapwatchd.yaml" <<EOF
# The only setting: watch the benchmark's JVM and no other one on this machine; the rest are defaults.
watch:
  agents:
    include: ["heapwatch.bench.Workload"]
EOF
  [[ -x "$heapwatchd" ]] && "$heapwatchd" --config "$dir/heapwatchd.yaml" --print-config >"$dir/heapwatchd-config.yaml"
  local fifo=$dir/control
  mkfifo "$fifo"
  log "$gc, ${live_mb} MiB live, -Xmx${xmx}m: building the live set"
  # Parallel: old generation = 3/4 of the heap = 1.5x the live set. With its default NewRatio=2 (old =
  # 1.33x live) the 512 MiB JVM ran back-to-back "Ergonomics" full GCs, 84 % of wall time paused.
  local sizing=()
  [[ $gc == Parallel ]] && sizing=(-XX:NewRatio=3)
  "${bin}java" -Xms${xmx}m -Xmx${xmx}m -XX:+Use${gc}GC "${sizing[@]}" \
    -Xlog:safepoint:file="$dir/safepoint.log":tm:filecount=0 -Xlog:gc:file="$dir/gc.log":tm:filecount=0 \
    -cp "$classes" heapwatch.bench.Workload --live-mb "$live_mb" --threads "$threads" \
    --churn-per-min "$churn" --hot-sessions "$hot" --warmup-seconds "$warmup" <"$fifo" >"$out" 2>"$dir/workload.err" &
  pid=$!
  exec 3>"$fifo"
  wait_line '^READY' 0 3600
  freq=$(hsperf get "$pid" sun.os.hrt.frequency)
  log "$(grep '^READY' "$out"); warming up ${warmup}s"
  wait_line '^CALIBRATED' 0 $((warmup + 120))
  log "$(grep '^CALIBRATED' "$out")"
  [[ $pair == *heapwatch* ]] && start_heapwatchd

  local i
  for ((i = 0; i < reps; i++)); do
    measure all -all; sleep "$gap"
    measure all-parallel -all -parallel="$par"; sleep "$gap"
  done
  for ((i = 0; i < natural_reps; i++)); do
    local seen
    if seen=$(wait_natural_gc "$natural_wait"); then
      measure all-after-old-gc -all
      echo "$seen" >>"$dir/natural.txt"
    else
      log "no natural old-generation collection within ${natural_wait}s"
      echo "none_within $natural_wait" >>"$dir/natural.txt"
      break
    fi
  done
  for ((i = 0; i < reps; i++)); do
    sleep "$gap"; measure live
    sleep "$gap"; measure live-parallel -parallel="$par"
  done

  if (( probes > 0 )); then
    attach_server start
    for ((i = 1; i <= probes; i++)); do  # histogram and no-op control alternate; their order too
      if (( controls == 1 && i % 2 == 0 )); then probe control "$i"; fi
      probe probe "$i"
      if (( controls == 1 && i % 2 == 1 )); then probe control "$i"; fi
    done
    attach_server stop
  fi

  local r a order
  for ((r = 1; r <= rounds; r++)); do
    order=$pair
    (( r % 2 == 0 )) && order=$(echo "$order" | tr ' ' '\n' | tac | paste -sd' ')
    for a in $order; do arm "$a" "$r"; done
  done
  stop_heapwatchd
  for ((r = 1; r <= jdk_arms; r++)); do arm jdk "$r"; done
  echo stop >&3
  exec 3>&-
  wait "$pid" || true
  pid=""
  rm -f "$fifo"
  echo "$freq" >"$dir/frequency"
  grep '^READY' "$out" | awk '{print $3}' >"$dir/live_bytes"
}

hsperf_server start
for live_mb in $lives; do
  for gc in $gcs; do
    run_config "$live_mb" "$gc"
  done
done

hsperf_server stop

bash "$here/report.sh" "$run_dir" | tee "$run_dir/results.md"
log "results: $run_dir/results.md"
