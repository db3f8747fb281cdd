#!/usr/bin/env bash
# Re-captures the class-histogram fixtures in this folder from real JVMs. Developer tool; the tests only read
# the files it wrote. Needs JDK 17 (java/javac/jcmd on PATH) and, optionally, JDK 25 at $JDK25.
#
# What each file is:
#   jdk17_live.txt / jdk25_live.txt   `jcmd PID GC.class_histogram` (live objects, after a full GC), verbatim,
#                                     including the "PID:" line the jcmd tool prints first
#   jdk17_all.txt  / jdk25_all.txt    `jcmd PID GC.class_histogram -all` (taken first, before any full GC)
#   jdk17_raw_unknown_command.txt     raw attach reply (status line + output) to jcmd "Foo.bar"
#   jdk17_raw_bad_option.txt          raw attach reply to jcmd "GC.class_histogram -bogus"
#   jdk17_raw_unknown_operation.txt   raw attach reply to the (non-jcmd) operation "nosuchop"
#   jdk17_jcmd_not_attachable.txt     what the jcmd tool prints (stdout+stderr) for a JVM started with
#                                     -XX:+DisableAttachMechanism (an "Exception in thread"-style reply)
# The JVM is HwTestApp.java from this folder in "stdin" mode, run with -XX:+UseSerialGC; the -all
# histograms hold 3000 or 6000 HwTestApp$Garbage objects (startup garbage may already be collected).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
JDK25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
javac -d "$work" "$here/HwTestApp.java"
cd "$work"  # the JVMs' working directory (where attach clients put their trigger files)

start() {  # start JAVA [OPTIONS...]: starts HwTestApp in "stdin" mode, waits for "ready", sets $pid, $out, $cmd
  local java=$1; shift
  out="$work/out.$RANDOM"
  local fifo="$work/in.$RANDOM"
  mkfifo "$fifo"
  "$java" "$@" -XX:+UseSerialGC -cp "$work" HwTestApp stdin <"$fifo" >"$out" 2>&1 &
  pid=$!
  pids+=("$pid")
  exec {cmd}>"$fifo"  # keeps the JVM's stdin open; writing 'g' drops fresh garbage
  for _ in $(seq 300); do grep -q ready "$out" && break; sleep 0.1; done
}

drop_garbage() {  # makes the JVM drop 3000 fresh HwTestApp$Garbage objects and waits until it has
  local before
  before=$(grep -c garbage "$out" || true)
  printf g >&"$cmd"
  for _ in $(seq 100); do (($(grep -c garbage "$out" || true) > before)) && return; sleep 0.05; done
}

capture() {  # capture NAME JAVA_HOME_BIN
  local name=$1 bin=$2
  start "$bin/java"
  # Other tools on the machine (e.g. a running heapwatchd) may have run a full GC on this JVM already:
  # drop fresh garbage right before the -all histogram, which neither collects nor runs a GC.
  for _ in 1 2 3 4 5; do
    drop_garbage
    "$bin/jcmd" "$pid" GC.class_histogram -all >"$here/${name}_all.txt"
    grep -q 'HwTestApp\$Garbage' "$here/${name}_all.txt" && break
  done
  "$bin/jcmd" "$pid" GC.class_histogram >"$here/${name}_live.txt"
}

capture jdk17 "$(dirname "$(readlink -f "$(command -v java)")")"
python3 "$here/attach_raw.py" "$pid" jcmd "Foo.bar" >"$here/jdk17_raw_unknown_command.txt"
python3 "$here/attach_raw.py" "$pid" jcmd "GC.class_histogram -bogus" >"$here/jdk17_raw_bad_option.txt"
python3 "$here/attach_raw.py" "$pid" nosuchop >"$here/jdk17_raw_unknown_operation.txt"
start java -XX:+DisableAttachMechanism
jcmd "$pid" VM.version >"$here/jdk17_jcmd_not_attachable.txt" 2>&1 || true
if [[ -x $JDK25/bin/java ]]; then
  capture jdk25 "$JDK25/bin"
else
  echo "JDK 25 not found at $JDK25: jdk25_*.txt not refreshed" >&2
fi
echo "fixtures written to $here" >&2
