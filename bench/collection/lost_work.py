#!/usr/bin/env python3
"""What one class histogram costs the workload in lost work, against the pause it caused.

Used by bench/collection/report.sh. A histogram stops the JVM for its safepoint's "Total" (-Xlog:safepoint);
if that pause were all it cost, the workload would lose exactly that many seconds of work. A heap walk can
cost more (caches and TLBs refilled, a forced full GC's aftermath) or less (a compacted heap runs faster).
This measures it around every histogram the arms saw, from the workload's per-second counter:

  rate       = ops/s over [start - 2 - BASE, start - 2] s (the BASE seconds before the histogram)
  lost (s)   = rate x (window's length) - ops done in the window, / rate
               where the window is [start - 1, end + AFTER] s, and start = end - Total.

The window is short on purpose: the workload's rate wanders by 5-20 % over tens of seconds here, so the
method's noise grows with the window (placebo sd on 512 MiB runs: 0.6-3.0 s with 20 s before and 15 s after,
0.2-0.75 s with 10 s before and 3 s after), while what a heap walk should leave behind (caches and TLBs to refill,
the attach listener printing the histogram) is milliseconds of work: the histogram rows say whether it is.

A window whose baseline or own span holds another histogram, a full collection of the workload's own (a
Parallel full GC of seconds would swamp the figure), or a gap in the counter, is skipped. The same
computation at points outside the watchers' arms that no histogram is near (every 2 s, so neighbouring placebo
windows overlap) is the method's own noise (placebo):
its mean must be about 0 s, and its spread says what one window can resolve.

  lost_work.py CONFIG_DIR          prints one line per kind of histogram, then the control's and the placebo's:
    kind n pause_sum_s lost_sum_s lost_mean_s lost_sd_s lost_per_pause_upper
    corrected corrected_upper net net_upper
  lost_per_pause_upper: the one-sided 95 % upper bound of lost / pause (Student t over the windows, which
  do not overlap; "-" for the placebo, the control and for fewer than 2 windows).
  corrected, corrected_upper: the same with the placebo's mean lost subtracted from every window's (the
  workload's drift: a rate that is still rising after the warm-up makes every window's "lost" negative).
  net, net_upper (probe rows only): lost / pause with the control's mean lost subtracted: the histogram's
  own cost without the attach client's, which heapwatchd pays as its own CPU (measured in its arms); the
  bound uses Welch's standard error of the two means and t with the smaller sample's degrees of freedom.
  kinds: heapwatch-live, heapwatch-all (histograms in heapwatchd's arms), probe-all (run.sh's probes: what
  heapwatchd runs, -all -parallel=N, taken over the attach socket with the workload running), jdk-live (the
  JDK-default arms), control (run.sh's control windows: a no-op command, VM.version, through the same
  attach client as the probes, its attach's start and end standing for a pause's), placebo (no histogram).

Inputs (written by run.sh): arms.txt ("arm round t0_ms t1_ms ..."), workload.out ("ops EPOCH_MS
CUMULATIVE"), safepoint.log and gc.log (-Xlog with the 'tm' decorator: milliseconds since the epoch).
"""
import math
import os
import re
import sys

BASE_S = 10.0
# One-sided 95 % quantiles of Student's t for 1..30 degrees of freedom (30 and more use the last).
T95 = [6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761,
       1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701,
       1.699, 1.697]
AFTER_S = 3.0


def read_arms(d):
    """The windows of arms.txt as (name, t0_s, t1_s), and the (start_s, end_s) of the no-op attaches of
    run.sh's control windows (columns 8 and 9 of their lines)."""
    arms, controls = [], []
    with open(os.path.join(d, "arms.txt")) as f:
        for line in f:
            w = line.split()
            if len(w) >= 4:
                arms.append((w[0], int(w[2]) / 1000.0, int(w[3]) / 1000.0))
            if len(w) >= 9 and w[0] == "control" and int(w[7]) > 0:
                controls.append((int(w[7]) / 1000.0, int(w[8]) / 1000.0))
    return arms, controls


def mean_sd(values):
    """Mean and sample standard deviation (0 for fewer than 2 values) of a non-empty list."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return mean, sd


def read_ops(d):
    ts, cs = [], []
    with open(os.path.join(d, "workload.out")) as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "ops":
                ts.append(int(w[1]) / 1000.0)
                cs.append(int(w[2]))
    return ts, cs


def read_own_full_gcs(d):
    """End times of the workload's own full collections (not a histogram's, not System.gc() at start-up)."""
    out = []
    with open(os.path.join(d, "gc.log")) as f:
        for line in f:
            if "Pause Full" in line and "Heap Inspection" not in line and "System.gc()" not in line:
                out.append(int(line[1:line.index("ms]")]) / 1000.0)
    return out


def read_histograms(d):
    """(start_s, end_s, live) of every GC_HeapInspection safepoint."""
    full_gc = []
    with open(os.path.join(d, "gc.log")) as f:
        for line in f:
            if "Pause Full (Heap Inspection Initiated GC)" in line:
                full_gc.append(int(line[1:line.index("ms]")]) / 1000.0)
    out = []
    with open(os.path.join(d, "safepoint.log")) as f:
        for line in f:
            if "HeapInspection" not in line:
                continue
            end = int(line[1:line.index("ms]")]) / 1000.0
            m = re.search(r"Total: (\d+) ns", line)
            total = int(m.group(1)) / 1e9 if m else 0.0
            start = end - total
            live = any(start - 0.01 <= t <= end + 0.01 for t in full_gc)
            out.append((start, end, live))
    return out


def ops_at(ts, cs, t):
    """Cumulative ops at time t, interpolated linearly between the counter's lines; None outside them."""
    if not ts or t < ts[0] or t > ts[-1]:
        return None
    lo, hi = 0, len(ts) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ts[mid] <= t:
            lo = mid
        else:
            hi = mid
    if ts[hi] - ts[lo] > 3.0:  # a gap in the counter (the workload was stopped for seconds): no figure
        return None
    if ts[hi] == ts[lo]:
        return cs[lo]
    return cs[lo] + (cs[hi] - cs[lo]) * (t - ts[lo]) / (ts[hi] - ts[lo])


def lost_seconds(ts, cs, start, end):
    b0, b1 = start - 2 - BASE_S, start - 2
    w0, w1 = start - 1, end + AFTER_S
    c = [ops_at(ts, cs, t) for t in (b0, b1, w0, w1)]
    if any(v is None for v in c):
        return None
    rate = (c[1] - c[0]) / (b1 - b0)
    if rate <= 0:
        return None
    return (rate * (w1 - w0) - (c[3] - c[2])) / rate


def main():
    d = sys.argv[1]
    arms, controls = read_arms(d)
    ts, cs = read_ops(d)
    hists = read_histograms(d)
    own_full = read_own_full_gcs(d)

    def arm_of(t):
        for name, t0, t1 in arms:
            if t0 <= t <= t1:
                return name
        return None

    def clear(a, b, own=None):
        return (all(h is own or h[1] < a or h[0] > b for h in hists) and
                all(t < a or t > b + 30 for t in own_full))  # a full GC's log line comes at its end

    rows = {}
    for h in hists:
        arm = arm_of(h[0])
        if arm not in ("heapwatch", "jdk", "probe"):
            continue
        if not clear(h[0] - 2 - BASE_S - 1, h[1] + AFTER_S + 1, own=h):
            continue
        lost = lost_seconds(ts, cs, h[0], h[1])
        if lost is None:
            continue
        kind = f"{arm}-{'live' if h[2] else 'all'}"
        rows.setdefault(kind, []).append((h[1] - h[0], lost))

    # Controls: the same computation around each no-op attach (VM.version: no safepoint) of run.sh's control
    # windows, the attach's start and end standing for the pause's: what the probe's own attach costs.
    for a0, a1 in controls:
        if not clear(a0 - 2 - BASE_S - 1, a1 + AFTER_S + 1):
            continue
        lost = lost_seconds(ts, cs, a0, a1)
        if lost is not None:
            rows.setdefault("control", []).append((0.0, lost))

    # Placebo: every 2 s from the first arm's start to the last one's end, where the baseline and the window
    # overlap no arm of a watcher (heapwatchd, JDK) and no histogram is near.
    if arms:
        watched = [(t0, t1) for name, t0, t1 in arms if name in ("heapwatch", "jdk")]
        first, last = min(a[1] for a in arms), max(a[2] for a in arms)
        t = first + 2 + BASE_S + 1
        while t + AFTER_S + 1 <= last:
            a, b = t - 2 - BASE_S - 1, t + AFTER_S + 1
            if (clear(a, b) and all(w1 < a or w0 > b for w0, w1 in watched) and
                    all(c1 < a or c0 > b for c0, c1 in controls)):
                lost = lost_seconds(ts, cs, t, t)
                if lost is not None:
                    rows.setdefault("placebo", []).append((0.0, lost))
            t += 2.0

    placebo = rows.get("placebo", [])
    drift = sum(l for _, l in placebo) / len(placebo) if placebo else 0.0
    control = [l for _, l in rows.get("control", [])]
    control_mean, control_sd = mean_sd(control) if len(control) > 1 else (None, None)
    kinds = ("heapwatch-live", "heapwatch-all", "probe-all", "probe-live", "jdk-live", "jdk-all", "control",
             "placebo")
    for kind in kinds:
        r = rows.get(kind)
        if not r:
            continue
        n = len(r)
        pause = sum(p for p, _ in r)
        lost = sum(l for _, l in r)
        mean, sd = mean_sd([l for _, l in r])
        upper = corrected = corrected_upper = net = net_upper = "-"
        if kind not in ("placebo", "control") and n > 1 and pause > 0:
            t95 = T95[min(n - 1, len(T95)) - 1]
            upper = f"{(mean + t95 * sd / math.sqrt(n)) / (pause / n):.3f}"
            corrected = f"{(mean - drift) / (pause / n):.3f}"
            corrected_upper = f"{(mean - drift + t95 * sd / math.sqrt(n)) / (pause / n):.3f}"
            if kind.startswith("probe-") and control_sd is not None:
                # Welch's standard error of the difference of the two means; t with the smaller sample's
                # degrees of freedom (conservative).
                se = math.sqrt(sd ** 2 / n + control_sd ** 2 / len(control))
                t_net = T95[min(min(n, len(control)) - 1, len(T95)) - 1]
                net = f"{(mean - control_mean) / (pause / n):.3f}"
                net_upper = f"{(mean - control_mean + t_net * se) / (pause / n):.3f}"
        print(f"{kind} {n} {pause:.4f} {lost:.4f} {mean:.4f} {sd:.4f} {upper} {corrected} {corrected_upper} "
              f"{net} {net_upper}")

if __name__ == "__main__":
    main()
