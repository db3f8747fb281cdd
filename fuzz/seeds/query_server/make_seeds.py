#!/usr/bin/env python3
"""Writes the query_server fuzzer's seeds into this folder: one file per request, its first byte the
method's index (fuzz/query_server_fuzzer.cc), the rest the request in protobuf wire format
(proto/heapwatch/v1/heapwatch.proto), naming the fixture's agents, classes and dump ids."""
import os


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def string(field, s):
    data = s.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def uint(field, n):
    return varint(field << 3) + varint(n)


def timestamp(field, seconds, nanos=0):
    body = uint(1, seconds) + (uint(2, nanos) if nanos else b"")
    return varint(field << 3 | 2) + varint(len(body)) + body


T0 = 1_700_000_000
LIVE, DOWN = "host-1-a", "host-2-b"
DONE, OLDER = "20231114T221320.000000Z", "20231114T220000.000000Z"
seeds = {
    "list_agents": (0, b""),
    "list_suspects": (1, string(1, LIVE)),
    "list_leaks": (2, string(1, LIVE)),
    "explain_suspect": (3, string(1, LIVE) + string(2, "Leak")),
    "class_history": (4, string(1, LIVE) + string(2, "Leak") + timestamp(3, T0) + timestamp(4, T0 + 120)),
    "class_history_down": (4, string(1, DOWN) + string(2, "Foo")),
    "diff_snapshots": (5, string(1, LIVE) + timestamp(2, T0) + timestamp(3, T0 + 120) + uint(4, 2)),
    "get_report": (6, string(1, LIVE) + string(2, "Leak")),
    "get_report_leak": (6, string(1, LIVE) + string(3, "L00000000002a")),
    "list_reports": (7, string(1, LIVE)),
    "trigger_dump": (8, string(1, LIVE)),
    "diff_dumps": (9, string(1, LIVE) + string(2, OLDER) + string(3, DONE) + uint(4, 1) + uint(5, 1)),
    "diff_dumps_last_two": (9, string(1, LIVE)),
    "live_set": (10, string(1, LIVE) + timestamp(2, T0, 5) + timestamp(3, T0 + 60)),
}
here = os.path.dirname(os.path.abspath(__file__))
for name, (method, body) in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(bytes([method]) + body)
