#!/usr/bin/env python3
"""Writes the agent_daemon_messages fuzzer's seeds into this folder (fuzz/agent_daemon_messages_fuzzer.cc
describes the script format): the messages daemon/agent_gateway.cc sends an agent (Registered with the
configuration PushedConfig builds from the defaults of docs/configuration.md: 1 min histograms, a pause
budget of 1% of that, 10 s heartbeats; Ack; AgentConfig; HistogramRequest; DumpRequest with an id as
daemon/escalation_worker.cc names dumps), an upload position, a reconnect, each alone and as one
session. Wire format by hand (proto/heapwatch/agent/v1/agent.proto)."""
import os
import struct


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(number, body):
    return varint(number << 3 | 2) + varint(len(body)) + body


def uint(number, n):
    return varint(number << 3) + varint(n)


def duration(number, seconds, nanos=0):
    return field(number, uint(1, seconds) + (uint(2, nanos) if nanos else b""))


CONFIG = duration(1, 60) + uint(2, 1) + duration(3, 0, 600_000_000) + duration(4, 10) + uint(5, 1)


def frame(daemon_message):
    return bytes([0]) + struct.pack("<H", len(daemon_message)) + daemon_message


def registered(stored_through):
    return frame(field(1, (uint(1, stored_through) if stored_through else b"") + field(2, CONFIG)))


def ack(stored_through):
    return frame(field(2, uint(1, stored_through)))


def config():
    return frame(field(3, CONFIG))


def histogram_request(request_id, mode):
    return frame(field(4, uint(1, request_id) + uint(2, mode)))


def dump_request(dump_id, gzip):
    return frame(field(5, field(1, dump_id.encode()) + (uint(2, 1) if gzip else b"") + uint(3, 1)))


def deliver(n):
    return bytes([1, n])


def upload(received, size):
    return bytes([2]) + struct.pack("<QQ", received, size)


RECONNECT = bytes([3])

SEEDS = {
    "registered": registered(0),
    "registered_ack": registered(0) + deliver(3) + ack(3),
    "config": registered(0) + config(),
    "histogram_request": registered(0) + histogram_request(7, 2),
    "dump_request": registered(0) + dump_request("20261125T020000.123456Z", True),
    "upload_position": upload(1 << 20, 3 << 20),
    "session": registered(0) + deliver(5) + ack(2) + config() + histogram_request(1, 1)
    + dump_request("20261125T020000.123456Z", False) + upload(1 << 20, 3 << 20) + ack(5)
    + RECONNECT + deliver(2) + registered(6) + ack(7),
}

here = os.path.dirname(os.path.abspath(__file__))
for name, data in SEEDS.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(data)
