#!/usr/bin/env python3
"""Developer tool (not used by the tests): sends one attach-protocol v1 request to a JVM whose attach
listener is already running (/tmp/.java_pid<PID> exists, e.g. after one `jcmd PID VM.version`) and writes the
raw reply (status line + output) to stdout. Used by capture_fixtures.sh to record error replies byte for byte.

usage: attach_raw.py PID COMMAND [ARG0 [ARG1 [ARG2]]]
"""
import socket
import sys

pid, cmd, args = sys.argv[1], sys.argv[2], (sys.argv[3:] + ["", "", ""])[:3]
s = socket.socket(socket.AF_UNIX)
s.connect("/tmp/.java_pid" + pid)
s.sendall(b"1\0" + cmd.encode() + b"\0" + b"".join(a.encode() + b"\0" for a in args))
out = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    out += chunk
sys.stdout.buffer.write(out)
