#!/usr/bin/env python3
"""Runs one diagnostic command in a local HotSpot JVM over its attach socket, as heapwatchd does.

Used by bench/collection/run.sh for the probe histograms: `jcmd` starts a whole JVM for every call (about a
second of CPU on the 2-core machine, next to the workload), which the lost-work figure would then charge to
the histogram. This script is cheaper but not free: starting python3 costs 0.4 CPU-seconds on this VM, and a
no-op command through it (VM.version) cost the workload 0.53 s of work (2026-12-02 control,
bench/collection/README.md), which the lost-work figure charges to the histogram too. heapwatchd, a running
process, pays no start per histogram.

  attach.py PID 'GC.class_histogram -all -parallel=2'     prints the JVM's reply; exit 1 on an error

The protocol (docs/attach-protocol.md; HotSpot's attachListener_linux.cpp): if /tmp/.java_pid<PID> does not
exist, create .attach_pid<PID> in the JVM's working directory, send SIGQUIT and wait for the socket; then
write "1\\0jcmd\\0<command line>\\0\\0\\0" and read "<return code>\\n<output>" until the JVM closes.
"""
import os
import signal
import socket
import sys
import time


def main():
    pid = int(sys.argv[1])
    command = sys.argv[2]
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
                    sys.exit(f"attach.py: no attach socket from pid {pid} within 10 s")
                time.sleep(0.02)
        finally:
            os.unlink(trigger)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.sendall(b"1\0jcmd\0" + command.encode() + b"\0\0\0")
    reply = bytearray()
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        reply += chunk
    s.close()
    text = reply.decode(errors="replace")
    code, _, output = text.partition("\n")
    sys.stdout.write(output)
    if code.strip() != "0":
        sys.exit(f"attach.py: the JVM answered {code.strip()!r}")


if __name__ == "__main__":
    main()
