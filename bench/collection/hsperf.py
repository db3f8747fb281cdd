#!/usr/bin/env python3
"""Reads a HotSpot JVM's performance counters from its hsperfdata file, without attaching to it.

Used by bench/collection/run.sh, where a `jcmd PerfCounter.print` (a new JVM and an attach per read) would
cost a second of CPU on a 2-core machine and disturb what is measured. Even a python3 start costs 0.4
CPU-seconds on this VM (about half a second of the workload's work when it keeps both CPUs busy), so run.sh
reads the counters it takes at the edges of its windows through one `hsperf.py serve` that runs all along.

  hsperf.py get PID NAME...        prints the counters' values, one a line, in the order asked
  hsperf.py serve                  reads "PID NAME..." lines from stdin; answers each with one line of the
                                   values, space-separated ("NA" for a missing counter, "error" for a
                                   missing or corrupt file)

The file format (PerfDataPrologue and PerfDataEntry, hotspot/share/runtime/perfMemory.hpp and
perfData.hpp): a 32-byte prologue (magic 0xcafec0c0 big-endian, byte order, version, ..., entry offset at
byte 24, entry count at byte 28), then entries of: entry length, name offset, vector length (int32 each),
type, flags, units, variability (one byte each), data offset (int32). Names are NUL-terminated; 'J' values
are int64, 'B' vectors are strings. The file is /tmp/hsperfdata_<user>/<pid>, or under /proc/PID/root.
Counters are in the JVM's units: times in ticks of sun.os.hrt.frequency, sizes in bytes.
"""
import glob
import struct
import sys


class PerfError(Exception):
    pass


def perf_file(pid):
    for root in ("", f"/proc/{pid}/root"):
        hits = glob.glob(f"{root}/tmp/hsperfdata_*/{pid}")
        if hits:
            return hits[0]
    raise PerfError(f"no hsperfdata file for pid {pid}")


def read_counters(path):
    with open(path, "rb") as f:
        data = f.read()
    if struct.unpack_from(">I", data, 0)[0] != 0xCAFEC0C0:
        raise PerfError(f"{path}: bad magic")
    order = "<" if data[4] == 1 else ">"
    entry_offset, entries = struct.unpack_from(order + "ii", data, 24)
    out = {}
    off = entry_offset
    for _ in range(entries):
        length, name_off, vlen, dtype, _flags, _units, _var, data_off = struct.unpack_from(
            order + "iiibbbbi", data, off)
        name_end = data.index(b"\0", off + name_off)
        name = data[off + name_off:name_end].decode()
        if dtype == ord("J") and vlen == 0:
            out[name] = struct.unpack_from(order + "q", data, off + data_off)[0]
        elif dtype == ord("B") and vlen > 0:
            raw = data[off + data_off:off + data_off + vlen]
            out[name] = raw.split(b"\0", 1)[0].decode(errors="replace")
        off += length
    return out


def serve():
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            c = read_counters(perf_file(words[0]))
            print(" ".join(str(c.get(name, "NA")) for name in words[1:]), flush=True)
        except (OSError, PerfError, struct.error, ValueError) as e:
            print(f"hsperf: {e}", file=sys.stderr, flush=True)
            print("error", flush=True)


def main():
    if sys.argv[1:2] == ["serve"]:
        serve()
        return
    cmd, pid = sys.argv[1], sys.argv[2]
    if cmd != "get":
        sys.exit(__doc__)
    try:
        c = read_counters(perf_file(pid))
    except PerfError as e:
        sys.exit(f"hsperf: {e}")
    for name in sys.argv[3:]:
        print(c.get(name, "NA"))


if __name__ == "__main__":
    main()
