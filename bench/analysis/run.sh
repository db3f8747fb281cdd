#!/usr/bin/env bash
# The analysis benchmark (called by scripts/bench.sh): dumps of real JVMs made on this machine, analysed by
# heapwatch stage by stage, compared with reading the file once, Boost.Graph's Lengauer-Tarjan and VisualVM's
# heap library. Prints one markdown table of figures and one of ratios.
#
# Usage: run.sh PATH/TO/heapwatch_analysis_bench
# Environment (defaults):
#   HEAPWATCH_BENCH_CACHE=/var/tmp/heapwatch-bench   dumps and compiled Java classes (never in the repo)
#   HEAPWATCH_BENCH_SIZES="64 256 1024 tomcat"       MiB of dump to make and analyse; "tomcat": a real
#       application server's dump instead (make_tomcat_dump.sh: Tomcat 10 holding 300,000 HTTP sessions)
#   HEAPWATCH_BENCH_BOOST_MAX=256                    largest dump (MiB) Boost runs on: its
#       lengauer_tarjan_dominator_tree keeps a std::deque per vertex, ~1 KB per object (measured 4.7 GB for 4.7 M objects; ~18 GB for the 1 GiB dump)
#   HEAPWATCH_BENCH_VISUALVM_MAX=512                 largest dump (MiB) VisualVM's library runs on
#   HEAPWATCH_BENCH_VISUALVM_TIMEOUT=1800            seconds before VisualVM is stopped (reported as ">T")
#   HEAPWATCH_BENCH_SKIP_BOOST=1 / HEAPWATCH_BENCH_SKIP_VISUALVM=1 to skip a baseline.
#   HEAPWATCH_BENCH_BOOST_FULL_GRAPH=1 gives Boost the references of unreachable objects too (Boost 1.74
#       then leaves a few hundred reachable objects without an immediate dominator; boost_dominators.h).
set -euo pipefail
bench=$1
here=$(cd "$(dirname "$0")" && pwd)
cache=${HEAPWATCH_BENCH_CACHE:-/var/tmp/heapwatch-bench}
sizes=${HEAPWATCH_BENCH_SIZES:-64 256 1024 tomcat}
boost_max=${HEAPWATCH_BENCH_BOOST_MAX:-256}
visualvm_max=${HEAPWATCH_BENCH_VISUALVM_MAX:-512}
visualvm_timeout=${HEAPWATCH_BENCH_VISUALVM_TIMEOUT:-1800}
jar=$(find /usr/share/visualvm -name org-graalvm-visualvm-lib-jfluid-heap.jar 2>/dev/null | head -1 || true)
mkdir -p "$cache/classes" "$cache/results"

if [[ -n "$jar" && "${HEAPWATCH_BENCH_SKIP_VISUALVM:-0}" != 1 ]]; then
  javac -cp "$jar" -d "$cache/classes" "$here/java/VisualVmRetained.java"
fi

# field NAME FILE: the value after "NAME" on the "stage"/"check" lines of a result file.
stage() { awk -v s="$2" -v f="$3" '$1=="stage" && $2==s { for (i=3;i<NF;i++) if ($i==f) print $(i+1) }' "$1"; }

# tag SIZE: the name of a dump's result files ("64m", "tomcat").
tag() { [[ $1 == tomcat ]] && echo tomcat || echo "${1}m"; }
# label SIZE BYTES: the dump column of the tables.
label() { awk -v b="$2" -v n="$1" 'BEGIN{printf "%s%.0f MiB", (n=="tomcat" ? "Tomcat sessions, " : ""), b/1048576}'; }

for size in $sizes; do
  if [[ $size == tomcat ]]; then
    dump="$cache/tomcat-sessions.hprof"
    bash "$here/make_tomcat_dump.sh" "$dump"
    args=(--class 'org.apache.catalina.session.StandardSession')
  else
    dump="$cache/heap-${size}m.hprof"
    bash "$here/make_dump.sh" "$size" "$dump"
    args=(--class 'HeapBuilder$LeakedSession')
  fi
  mib=$(( $(stat -c %s "$dump") / 1048576 ))
  out="$cache/results/heapwatch-$(tag "$size").txt"
  if [[ "${HEAPWATCH_BENCH_SKIP_BOOST:-0}" != 1 && $mib -le $boost_max ]]; then args+=(--boost); fi
  echo "analysis bench: heapwatch on $dump ${args[*]}" >&2
  "$bench" "${args[@]}" "$dump" | tee "$out" >&2
  vout="$cache/results/visualvm-$(tag "$size").txt"
  rm -f "$vout"
  if [[ -n "$jar" && "${HEAPWATCH_BENCH_SKIP_VISUALVM:-0}" != 1 && $mib -le $visualvm_max ]]; then
    rm -rf "$dump.hwcache"
    echo "analysis bench: VisualVM heap library on $dump" >&2
    xmx=$(( mib * 12 < 4096 ? 4096 : mib * 12 ))
    if ! timeout "$visualvm_timeout" /usr/bin/time -f "visualvm peak_rss_kb %M cpu_seconds %U %S" \
        java -Xmx${xmx}m -cp "$jar:$cache/classes" VisualVmRetained "$dump" >"$vout" 2>&1; then
      echo "visualvm timeout $visualvm_timeout" >>"$vout"
    fi
    cat "$vout" >&2
    rm -rf "$dump.hwcache"
  fi
done

echo
echo "### Analysis stages (seconds wall / CPU; peak RSS of the stage in MiB)"
echo
echo "| dump | objects | references | read file | parse | dominators | retained sizes | paths to the 5 biggest objects | report + suspect | total (wall / CPU) | peak RSS | RSS / dump |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for size in $sizes; do
  out="$cache/results/heapwatch-$(tag "$size").txt"
  [[ -s "$out" ]] || continue
  bytes=$(awk '$1=="file" {print $4}' "$out")
  objects=$(awk '$1=="check" && $2=="objects" {print $3}' "$out")
  refs=$(awk '$1=="check" && $2=="objects" {print $5}' "$out")
  row="| $(label "$size" "$bytes") | $objects | $refs"
  peak=0
  total=0
  total_cpu=0
  for s in read parse dominators retained paths report; do
    w=$(stage "$out" $s seconds); c=$(stage "$out" $s cpu_seconds); p=$(stage "$out" $s peak_rss_bytes)
    row+=" | $w / $c"
    (( p > peak )) && peak=$p
    if [[ $s != read && $s != paths ]]; then
      total=$(awk -v a="$total" -v b="$w" 'BEGIN{print a+b}')
      total_cpu=$(awk -v a="$total_cpu" -v b="$c" 'BEGIN{print a+b}')
    fi
  done
  row+=" | $(printf %.2f "$total") / $(printf %.2f "$total_cpu") | $(awk -v p="$peak" 'BEGIN{printf "%.0f", p/1048576}') | $(awk -v p="$peak" -v b="$bytes" 'BEGIN{printf "%.2f", p/b}') |"
  echo "$row"
done

echo
echo "### Ratios (wall clock / CPU seconds). First column: analysis time in multiples of reading the file once"
echo "### (page cache warm). Other columns: baseline time / heapwatch time (> 1: heapwatch is faster)."
echo
echo "| dump | total / read file | Boost LT / our dominators | Boost build+LT / our dominators | VisualVM retained sizes / our total | VisualVM peak RSS |"
echo "|---|---|---|---|---|---|"
for size in $sizes; do
  out="$cache/results/heapwatch-$(tag "$size").txt"
  [[ -s "$out" ]] || continue
  bytes=$(awk '$1=="file" {print $4}' "$out")
  read_s=$(stage "$out" read seconds)
  total=0
  total_cpu=0
  for s in parse dominators retained report; do
    total=$(awk -v a="$total" -v b="$(stage "$out" $s seconds)" 'BEGIN{print a+b}')
    total_cpu=$(awk -v a="$total_cpu" -v b="$(stage "$out" $s cpu_seconds)" 'BEGIN{print a+b}')
  done
  dom=$(stage "$out" dominators seconds); dom_cpu=$(stage "$out" dominators cpu_seconds)
  lt=$(stage "$out" boost_lt seconds); build=$(stage "$out" boost_build seconds)
  lt_cpu=$(stage "$out" boost_lt cpu_seconds); build_cpu=$(stage "$out" boost_build cpu_seconds)
  mism=$(awk '$1=="check" && $2=="boost_idom_mismatches" {print $3, $5}' "$out")
  if [[ -n "$lt" ]]; then
    r_lt=$(awk -v a="$lt" -v b="$dom" -v x="$lt_cpu" -v y="$dom_cpu" 'BEGIN{printf "%.1f / %.1f", a/b, x/y}')
    r_blt=$(awk -v a="$lt" -v c="$build" -v b="$dom" -v x="$lt_cpu" -v z="$build_cpu" -v y="$dom_cpu" 'BEGIN{printf "%.1f / %.1f", (a+c)/b, (x+z)/y}')
    set -- $mism
    r_lt+=" (idoms differ on $1 objects, Boost gives none for $2 reachable ones)"
  else
    r_lt="not run"; r_blt="not run"
  fi
  vout="$cache/results/visualvm-$(tag "$size").txt"
  if [[ -s "$vout" ]] && grep -q "visualvm total" "$vout"; then
    vt=$(awk '$1=="visualvm" && $2=="total" {print $3}' "$vout")
    vcpu=$(awk '$1=="visualvm" && $2=="peak_rss_kb" {print $5+$6}' "$vout")
    r_v=$(awk -v a="$vt" -v b="$total" -v c="$vcpu" -v d="$total_cpu" 'BEGIN{printf "%.0f / %.0f (VisualVM %.1f s wall, %.1f s CPU)", a/b, c/d, a, c}')
    v_rss=$(awk '$1=="visualvm" && $2=="peak_rss_kb" {printf "%.0f MiB", $3/1024}' "$vout")
  elif [[ -s "$vout" ]] && grep -q "visualvm timeout" "$vout"; then
    r_v=$(awk -v a="$visualvm_timeout" -v b="$total" 'BEGIN{printf "> %.0f (stopped after %d s)", a/b, a}')
    v_rss="-"
  else
    r_v="not run"; v_rss="-"
  fi
  read_cpu=$(stage "$out" read cpu_seconds)
  echo "| $(label "$size" "$bytes") | $(awk -v a="$total" -v b="$read_s" -v c="$total_cpu" -v d="$read_cpu" 'BEGIN{printf "%.1f / %.1f", a/b, c/(d>0?d:1e-3)}') | $r_lt | $r_blt | $r_v | $v_rss |"
done
