#!/usr/bin/env bash
# Turns a run directory of bench/collection/run.sh into its markdown tables (stdout).
# Usage: report.sh RUN_DIR      (run.sh calls it at the end; it can be re-run on an old directory)
# Inputs per configuration directory RUN_DIR/<GC>-<live MiB>/ (written by run.sh):
#   pauses.txt   mode ticks safepoints log_total_ns heap_used_bytes old_used_bytes jcmd_wall_ms
#   arms.txt     arm round t0_ms t1_ms ticks
#   workload.out "ops EPOCH_MS CUMULATIVE" lines;  safepoint.log, gc.log (-Xlog, tm decorator)
#   frequency    sun.os.hrt.frequency;  live_bytes  the live set measured by the workload after a System.gc()
set -euo pipefail
run_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
modes="live live-parallel all all-parallel all-after-old-gc"
configs=$(cd "$run_dir" && ls -d */ 2>/dev/null | tr -d / | sort -t- -k2,2n -k1,1 || true)

# stats MODE DIR: "n median max median_heap_used median_log_s max_rel_diff" of the mode's pauses (seconds).
stats() {
  awk -v m="$1" -v f="$(cat "$2/frequency")" '$1 == m {
      n++; p[n] = $2 / f; u[n] = $5; l[n] = $4 / 1e9
      d = ($4 > 0) ? ($2 / f - $4 / 1e9) / ($4 / 1e9) : 1; if (d < 0) d = -d; if (d > dmax) dmax = d }
    function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { if (!n) { print 0; exit }
      mx = 0; for (i = 1; i <= n; i++) if (p[i] > mx) mx = p[i]
      printf "%d %.4f %.4f %.0f %.4f %.4f\n", n, median(p, n), mx, median(u, n), median(l, n), dmax }' "$2/pauses.txt"
}

gib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1073741824 }'; }

echo "### Pause of one class histogram (seconds: median / max over the repetitions, from sun.rt.safepointTime)"
echo
echo "-parallel=N uses N = $(awk '{for (i=1;i<=NF;i++) if ($i=="cpus") print $(i+1)}' "$run_dir/settings.txt") (the CPUs here); the JDK 17 default (-parallel=0) uses max(1, 3/8 x CPUs) threads."
echo
echo "| collector | live set | -Xmx | live (full GC) | live -parallel=N | -all | -all -parallel=N | -all after a natural old GC | counter vs -Xlog:safepoint (max diff) |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in $configs; do
  d=$run_dir/$c
  [[ -s $d/pauses.txt && -s $d/frequency ]] || continue
  live=$(cat "$d/live_bytes")
  row="| ${c%%-*} | $(gib "$live") GiB | $(gib $((2 * ${c##*-} * 1048576))) GiB"
  worst=0
  for m in $modes; do
    set -- $(stats "$m" "$d")
    if [[ $1 == 0 ]]; then row+=" | not measured"; continue; fi
    row+=" | $2 / $3 (n=$1)"
    worst=$(awk -v a="$worst" -v b="$6" 'BEGIN { print (b > a) ? b : a }')
  done
  row+=" | $(awk -v w="$worst" 'BEGIN { printf "%.1f %%", 100 * w }') |"
  echo "$row"
done

echo
echo "### Cost model: median pause per GiB of live set (seconds/GiB), and the heap in use when the histogram started"
echo
echo "| collector | live set | live | live -parallel=N | -all (heap used) | -all -parallel=N (heap used) | -all after a natural old GC (heap used) |"
echo "|---|---|---|---|---|---|---|"
for c in $configs; do
  d=$run_dir/$c
  [[ -s $d/pauses.txt && -s $d/frequency ]] || continue
  live=$(cat "$d/live_bytes")
  row="| ${c%%-*} | $(gib "$live") GiB"
  for m in $modes; do
    set -- $(stats "$m" "$d")
    if [[ $1 == 0 ]]; then row+=" | -"; continue; fi
    row+=" | $(awk -v p="$2" -v l="$live" 'BEGIN { printf "%.3f", p / (l / 1073741824) }')"
    [[ $m == all* ]] && row+=" ($(gib "$4") GiB)"
  done
  echo "$row |"
done

echo
echo "### Throughput of the workload per arm (same JVM, arms one after the other)"
echo
echo "ops/s ± its standard error over 10 s blocks; paused = change of sun.rt.safepointTime / wall time (all"
echo "safepoints, the workload's own collections included); added = paused minus the no-watcher arm's;"
echo "Other heapwatchd processes on the machine (other checkouts' tests) may attach to this JVM too: a histogram"
echo "in the no-watcher arm, or more than one per minute, is theirs."
echo "histograms = GC_HeapInspection safepoints in the arm (live: those with a 'Pause Full (Heap Inspection Initiated GC)')."
echo
echo "| collector | live set | arm | seconds | ops/s | ratio to none | paused | added | histograms (live + all) | histogram pause total | histograms / min |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for c in $configs; do
  d=$run_dir/$c
  [[ -s $d/arms.txt && -s $d/frequency ]] || continue
  live=$(cat "$d/live_bytes")
  f=$(cat "$d/frequency")
  # One line per arm: arm seconds ops_per_s se paused_fraction hist live_hist hist_pause_s
  summary=$(for a in none jdk heapwatch; do
    grep -q "^$a " "$d/arms.txt" || continue
    windows=$(awk -v a="$a" '$1 == a { print $3, $4, $5, $6 + 0 }' "$d/arms.txt")
    echo "$windows" | awk -v a="$a" -v f="$f" -v out="$d/workload.out" -v sp="$d/safepoint.log" -v gc="$d/gc.log" '
      { t0[NR] = $1; t1[NR] = $2; ticks += $3; wall += ($2 - $1) / 1000; n = NR; if ($4 > foreign) foreign = $4 }
      END {
        while ((getline line < out) > 0) { split(line, w, " "); if (w[1] != "ops") continue
          for (i = 1; i <= n; i++) if (w[2] >= t0[i] && w[2] <= t1[i]) {
            if (!(i in a_ms)) { a_ms[i] = w[2]; a_c[i] = w[3]; blk_ms = w[2]; blk_c = w[3] }
            b_ms[i] = w[2]; b_c[i] = w[3]
            if (w[2] - blk_ms >= 10000) { r[++nb] = (w[3] - blk_c) / (w[2] - blk_ms) * 1000; blk_ms = w[2]; blk_c = w[3] } } }
        for (i = 1; i <= n; i++) { ops += b_c[i] - a_c[i]; ms += b_ms[i] - a_ms[i] }
        rate = ops / ms * 1000
        for (i = 1; i <= nb; i++) { m += r[i] }; m /= nb
        for (i = 1; i <= nb; i++) v += (r[i] - m) ^ 2
        se = nb > 1 ? sqrt(v / (nb - 1)) / sqrt(nb) : 0
        while ((getline line < sp) > 0) { if (line !~ /HeapInspection/) continue
          t = substr(line, 2) + 0
          for (i = 1; i <= n; i++) if (t >= t0[i] && t <= t1[i]) {
            hist++; c = split(line, w, " "); for (j = 1; j < c; j++) if (w[j] == "Total:") hp += w[j + 1] / 1e9 } }
        while ((getline line < gc) > 0) { if (line !~ /Pause Full \(Heap Inspection Initiated GC\)/) continue
          t = substr(line, 2) + 0
          for (i = 1; i <= n; i++) if (t >= t0[i] && t <= t1[i]) livehist++ }
        printf "%s %.0f %.0f %.0f %.6f %d %d %.3f %d\n", a, wall, rate, se, ticks / f / wall, hist, livehist, hp, foreign }'
  done)
  base_rate=$(echo "$summary" | awk '$1 == "none" { print $3 }')
  base_paused=$(echo "$summary" | awk '$1 == "none" { print $5 }')
  echo "$summary" | awk -v gc="${c%%-*}" -v live="$(gib "$live") GiB" -v br="$base_rate" -v bp="$base_paused" '
    { names["none"] = "no watcher"; names["jdk"] = "JDK default (jcmd every 60 s)"; names["heapwatch"] = "heapwatchd defaults"
      note = $9 > 0 ? sprintf(" (%d other heapwatchd running)", $9) : ""
      printf "| %s | %s | %s%s | %d | %d ± %d | %.4f | %.4f %% | %+.4f %% | %d (%d + %d) | %.3f s | %.2f |\n",
        gc, live, names[$1], note, $2, $3, $4, $3 / br, 100 * $5, 100 * ($5 - bp), $6, $7, $6 - $7, $8, $6 / ($2 / 60) }'
  if ! grep -q '^heapwatch ' "$d/arms.txt"; then
    echo "| ${c%%-*} | $(gib "$live") GiB | heapwatchd defaults | skipped: no heapwatchd binary | | | | | | | |"
  fi
done
echo
echo "### heapwatchd against no watcher, round by round"
echo
echo "One heapwatchd ran through all arms, stopped (SIGSTOP) outside its own; its pause budget accrued over the"
echo "whole run and was spent in its arms only, so its arms carry up to (run time / its arms' time) x the default"
echo "rate. Ratio = the heapwatch arm's ops/s / the no-watcher arm's in the same round (order alternates: ABBA);"
echo "mean over rounds ± the 95 % interval (Student t, rounds - 1 degrees of freedom). Histogram pause = the"
echo "GC_HeapInspection safepoints in heapwatchd's arms (-Xlog:safepoint), as a share of its arms' time and of the"
echo "whole alternating run (the budget's reference). CPU = heapwatchd's user + system time in its arms / their time."
if grep -q 'placebo=1' "$run_dir/settings.txt"; then
  echo
  echo "**Placebo run (HEAPWATCH_BENCH_PLACEBO=1): heapwatchd stayed stopped in its arms too; the rows below measure the"
  echo "design itself (an A/A comparison), not heapwatch.**"
fi
echo
echo "| collector | live set | rounds x s | heapwatch / none per round | mean ratio | 95 % interval | histograms (live + all) | their pause | share of its arms | share of the run | heapwatchd CPU |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
clk=$(awk '$1 == "clk_tck" { print $2 }' "$run_dir/settings.txt"); clk=${clk:-100}
for c in $configs; do
  d=$run_dir/$c
  [[ -s $d/arms.txt ]] && grep -q '^heapwatch ' "$d/arms.txt" && grep -q '^none ' "$d/arms.txt" || continue
  live=$(cat "$d/live_bytes")
  # One line per arm of the pairs: name round wall_s ops_per_s histograms live_histograms pause_s cpu_ticks
  awk -v out="$d/workload.out" -v sp="$d/safepoint.log" -v gc="$d/gc.log" '
    $1 == "none" || $1 == "heapwatch" { n++; nm[n] = $1; rd[n] = $2; t0[n] = $3; t1[n] = $4; cpu[n] = $7 + 0 }
    END {
      while ((getline line < out) > 0) { split(line, w, " "); if (w[1] != "ops") continue
        for (i = 1; i <= n; i++) if (w[2] >= t0[i] && w[2] <= t1[i]) {
          if (!(i in a_ms)) { a_ms[i] = w[2]; a_c[i] = w[3] }
          b_ms[i] = w[2]; b_c[i] = w[3] } }
      while ((getline line < sp) > 0) { if (line !~ /HeapInspection/) continue
        t = substr(line, 2) + 0
        for (i = 1; i <= n; i++) if (t >= t0[i] && t <= t1[i]) {
          h[i]++; k = split(line, w, " "); for (j = 1; j < k; j++) if (w[j] == "Total:") hp[i] += w[j + 1] / 1e9 } }
      while ((getline line < gc) > 0) { if (line !~ /Pause Full \(Heap Inspection Initiated GC\)/) continue
        t = substr(line, 2) + 0
        for (i = 1; i <= n; i++) if (t >= t0[i] && t <= t1[i]) lh[i]++ }
      for (i = 1; i <= n; i++)
        printf "%s %d %.3f %.1f %d %d %.4f %d\n", nm[i], rd[i], (t1[i] - t0[i]) / 1000,
          (b_c[i] - a_c[i]) / (b_ms[i] - a_ms[i]) * 1000, h[i], lh[i], hp[i], cpu[i] }' "$d/arms.txt" |
  awk -v gc="${c%%-*}" -v live="$(gib "$live") GiB" -v clk="$clk" '
    { r = $2; rate[$1, r] = $4; if ($2 > R) R = $2; run += $3
      if ($1 == "heapwatch") { hw += $3; hist += $5; lhist += $6; hpause += $7; ticks += $8 } else sec = $3 }
    END {
      split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13", tq, " ")
      m = 0; k = 0; list = ""
      for (r = 1; r <= R; r++) if ((("none", r) in rate) && (("heapwatch", r) in rate)) {
        q[++k] = rate["heapwatch", r] / rate["none", r]; m += q[k]; list = list (k > 1 ? " " : "") sprintf("%.4f", q[k]) }
      m /= k; for (i = 1; i <= k; i++) v += (q[i] - m) ^ 2
      half = k > 1 ? (k - 1 <= 15 ? tq[k - 1] : 2.0) * sqrt(v / (k - 1)) / sqrt(k) : 0
      printf "| %s | %s | %d x %.0f | %s | %.4f | %.4f - %.4f (± %.2f %%) | %d (%d + %d) | %.3f s | %.3f %% | %.3f %% | %.4f cores |\n",
        gc, live, k, sec, list, m, m - half, m + half, 100 * half, hist, lhist, hist - lhist, hpause,
        100 * hpause / hw, 100 * hpause / run, ticks / clk / hw }'
done
echo
echo "### What one histogram costs in lost work, against its pause"
echo
echo "Around every histogram in the arms (lost_work.py): the ops the workload would have done in [start - 1 s,"
echo "end + 3 s] at its rate of the 10 s before, minus the ops it did, in seconds of that rate. lost / pause = 1"
echo "means a histogram costs exactly its pause; above 1, the heap walk slows the application beyond it. The"
echo "placebo rows are the same computation at points of the no-watcher arms with no histogram near: the method's"
echo "own noise (mean about 0 s; sd = what one window resolves). Upper bound: the one-sided 95 % bound of lost /"
echo "pause over the windows; x the pause budget (0.1 %), it bounds what the histograms cost in throughput at"
echo "steady state, where the budget caps their pause at 0.1 % of wall time."
echo
echo "Corrected: the placebo's mean lost (the workload's drift) subtracted from every window's. Net (probes only):"
echo "the control's mean lost subtracted instead: the control windows run a no-op command (VM.version, no"
echo "safepoint) through the same attach client, alternating with the probes, so net is the histogram's own cost"
echo "without the client's (heapwatchd's client cost is its CPU, in the throughput table). The bound:"
echo "Welch's standard error, t with the smaller sample's degrees of freedom. Net upper bound x 0.1 %"
echo "budget is what the histograms cost in throughput at steady state, beside the daemon's CPU."
echo
echo "| collector | live set | histograms | n | pause (sum) | lost work (sum) | lost / pause | 95 % upper bound | corrected: lost / pause, upper bound | net of the control: lost / pause, upper bound | net upper bound x 0.1 % budget | lost per window: mean ± sd |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for c in $configs; do
  d=$run_dir/$c
  [[ -s $d/arms.txt && -s $d/safepoint.log ]] || continue
  live=$(cat "$d/live_bytes")
  python3 "$here/lost_work.py" "$d" | awk -v gc="${c%%-*}" -v live="$(gib "$live") GiB" '
    { names["heapwatch-all"] = "heapwatchd, -all"; names["heapwatch-live"] = "heapwatchd, live"
      names["probe-all"] = "probe, -all -parallel=N"; names["probe-live"] = "probe, live"
      names["jdk-live"] = "JDK default, live"; names["jdk-all"] = "JDK default, -all"
      names["control"] = "control (no-op attach)"; names["placebo"] = "placebo (none)"
      ratio = $3 > 0 ? sprintf("%.2f", $4 / $3) : "-"
      ub = $7 == "-" ? "-" : sprintf("%.3f", $7)
      cor = $8 == "-" ? "-" : sprintf("%.3f, %.3f", $8, $9)
      net = $10 == "-" ? "-" : sprintf("%.3f, %.3f", $10, $11)
      worst = ($11 == "-") ? "-" : sprintf("%.3f %%", 0.1 * $11)
      printf "| %s | %s | %s | %d | %.3f s | %.3f s | %s | %s | %s | %s | %s | %+.3f ± %.3f s |\n", gc, live, names[$1], $2, $3, $4, ratio, ub, cor, net, worst, $5, $6 }'
done
echo
echo "Settings: $(grep '^settings' "$run_dir/settings.txt" | cut -d' ' -f2-)"
echo "Machine: $(grep '^host' "$run_dir/settings.txt" | cut -d' ' -f2-)"
echo "heapwatchd: $(grep '^heapwatchd' "$run_dir/settings.txt" | cut -d' ' -f2-)"
