#!/usr/bin/env python3
"""Runs diagnostic commands in a local HotSpot JVM over its attach socket, as heapwatchd does.

Used by bench/collection/run.sh for the probe histograms and their no-op controls. `jcmd` starts a whole JVM
for every call (about a second of CPU on the 2-core machine, next to the workload), and even starting python3
costs 0.4 CPU-seconds on this VM: a no-op command through a fresh `attach.py` cost the workload 0.53 s of work
(2026-12-02 control, bench/collection/README.md), which the lost-work figure then charged to the histogram.
So run.sh starts this script once per JVM with --serve, as heapwatchd is a running process, and every probe
costs only the attach itself.

  attach.py PID 'GC.class_histogram -all -parallel=2'   prints the JVM's reply; exit 1 on an error
  attach.py --serve                                      reads "PID<TAB>COMMAND" lines from stdin; runs each,
                                                         drops the reply, and prints one line per command:
                                                         "ok|error START_MS END_MS REPLY_BYTES" (epoch ms)

The protocol (docs/attach-protocol.md; HotSpot's attachListener_linux.cpp): if /tmp/.java_pid<PID> does not
exist, create .attach_pid<PID> in the JVM's working directory, send SIGQUIT and wait for the socket; then
write "1\\0jcmd\\0<command line>\\0\\0\\0" and read "<return code>\\n<output>" until the JVM closes.
"""
import os
import signal
import socket
import sys
import time


class AttachError(Exception):
    pass


def attach(pid, command):
    """Returns (return code, output bytes) of one command."""
    sock_path = f"/proc/{pid}/root/tmp/.java_pid{pid}"
    if not os.path.exists(sock_path):
        trigger = f"/proc/{pid}/cwd/.attach_pid{pid}"
        with open(trigger, "w"):
            pass
        try:
            os.kill(pid, signal.SIGQUIT)
            deadline = time.monotonic() + 10
            while not os.path.exists(sock_path):
                if time.monotonic() > deadline:
                    raise AttachError(f"no attach socket from pid {pid} within 10 s")
                time.sleep(0.02)
        finally:
            os.unlink(trigger)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
        s.sendall(b"1\0jcmd\0" + command.encode() + b"\0\0\0")
        reply = bytearray()
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            reply += chunk
    finally:
        s.close()
    code, _, output = bytes(reply).partition(b"\n")
    return code.strip().decode(errors="replace"), output


def serve():
    for line in sys.stdin:
        pid, _, command = line.rstrip("\n").partition("\t")
        t0 = time.time_ns() // 1_000_000
        try:
            code, output = attach(int(pid), command)
            status = "ok" if code == "0" else "error"
            size = len(output)
        except (OSError, ValueError, AttachError) as e:
            status, size = "error", 0
            print(f"attach.py: {e}", file=sys.stderr, flush=True)
        t1 = time.time_ns() // 1_000_000
        print(f"{status} {t0} {t1} {size}", flush=True)


def main():
    if sys.argv[1:] == ["--serve"]:
        serve()
        return
    try:
        code, output = attach(int(sys.argv[1]), sys.argv[2])
    except AttachError as e:
        sys.exit(f"attach.py: {e}")
    sys.stdout.write(output.decode(errors="replace"))
    if code != "0":
        sys.exit(f"attach.py: the JVM answered {code!r}")


if __name__ == "__main__":
    main()
