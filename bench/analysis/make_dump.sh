#!/usr/bin/env bash
# Makes a heap dump of a real JVM for the analysis benchmark: runs bench/analysis/java/HeapBuilder.java
# with a live heap sized so that the HPROF file is about SIZE_MIB MiB, dumps it with
# `jcmd <pid> GC.heap_dump` (live objects, after a full GC), and stops the JVM.
# Usage: make_dump.sh SIZE_MIB OUT.hprof     (reuses OUT.hprof when it exists; needs javac/java/jcmd)
# Memory: the JVM gets -Xmx of 4x the dump size (at least 1 GiB); only one such JVM runs at a time.
set -euo pipefail
size_mib=$1
out=$2
if [[ -s "$out" ]]; then
  echo "make_dump: reusing $out ($(stat -c %s "$out") bytes)" >&2
  exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
classes=$(dirname "$out")/classes
mkdir -p "$classes"
javac -d "$classes" "$here/java/HeapBuilder.java"
# Calibrated on JDK 17 (compressed oops): one HeapBuilder unit makes about 1.08 MB of dump.
units=$(( size_mib * 1048576 / 1080000 ))
xmx=$(( size_mib * 4 < 1024 ? 1024 : size_mib * 4 ))
fifo=$(mktemp -u)
mkfifo "$fifo"
log=$(mktemp)
# The builder waits for stdin to close; keep the fifo open on fd 3 until the dump is written.
java -Xmx${xmx}m -cp "$classes" HeapBuilder "$units" <"$fifo" >"$log" &
jvm=$!
exec 3>"$fifo"
trap 'exec 3>&-; kill $jvm 2>/dev/null || true; rm -f "$fifo" "$log"' EXIT
for _ in $(seq 1200); do
  grep -q READY "$log" && break
  kill -0 $jvm 2>/dev/null || { echo "make_dump: HeapBuilder exited early" >&2; exit 1; }
  sleep 0.5
done
grep -q READY "$log" || { echo "make_dump: HeapBuilder did not become ready" >&2; exit 1; }
jcmd "$jvm" GC.heap_dump "$out.tmp" >&2
mv "$out.tmp" "$out"
exec 3>&-
wait $jvm || true
echo "make_dump: wrote $out ($(stat -c %s "$out") bytes, $units units)" >&2
