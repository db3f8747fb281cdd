#!/usr/bin/env bash
# Makes the heap dump of the dynamic-size benchmark: runs bench/analysis/java/ServerHeap.java (a monitoring
# server's heap shaped like the thesis's Table A.1 dumps: about 1.8 M objects and 4 M references at SCALE 1),
# dumps it with `jcmd <pid> GC.heap_dump` (live objects, after a full GC) and stops the JVM.
# Usage: make_server_dump.sh OUT.hprof [SCALE]   (reuses OUT.hprof when it exists; needs JDK 17's javac/java/jcmd)
set -euo pipefail
out=$1
scale=${2:-1.0}
if [[ -s "$out" ]]; then
  echo "make_server_dump: reusing $out ($(stat -c %s "$out") bytes)" >&2
  exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
jdk=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
classes=$(dirname "$out")/classes
mkdir -p "$classes"
"$jdk/bin/javac" -d "$classes" "$here/java/ServerHeap.java"
fifo=$(mktemp -u)
mkfifo "$fifo"
log=$(mktemp)
# The builder waits for stdin to close; keep the fifo open on fd 3 until the dump is written.
"$jdk/bin/java" -Xmx2g -cp "$classes" ServerHeap "$scale" <"$fifo" >"$log" &
jvm=$!
exec 3>"$fifo"
trap 'exec 3>&-; kill $jvm 2>/dev/null || true; rm -f "$fifo" "$log"' EXIT
for _ in $(seq 600); do
  grep -q READY "$log" && break
  kill -0 $jvm 2>/dev/null || { echo "make_server_dump: ServerHeap exited early" >&2; exit 1; }
  sleep 0.5
done
grep -q READY "$log" || { echo "make_server_dump: ServerHeap did not become ready" >&2; exit 1; }
"$jdk/bin/jcmd" "$jvm" GC.heap_dump "$out.tmp" >&2
mv "$out.tmp" "$out"
exec 3>&-
wait $jvm || true
echo "make_server_dump: wrote $out ($(stat -c %s "$out") bytes, scale $scale)" >&2
