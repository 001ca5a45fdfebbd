#!/usr/bin/env python3
"""Sends protocol-v1 event datagrams to hotkeyd at a steady rate with an exact hot-key share.

Usage:
  send_events.py --port P [--host 127.0.0.1] [--rate 3000] [--hot-share 0.3]
                 [--hot-key-hex 686f743a653265] [--background-keys 1000]
                 [--bad-datagrams-per-second 0] [--duration SECONDS]

Sends 50 datagrams/s of rate/50 event lines each, laid out in a fixed pattern: out of
every 100 consecutive lines, round(100 * hot_share) are `r <hot key>` and the rest are
`r bg:<n>` cycling over --background-keys keys. So the hot key's share of the traffic is
exactly --hot-share (to 1%), independent of timing, and each background key's share is (1 - hot_share) / background_keys (0.07%
with the defaults: far below any threshold or export minimum).

The hot key is given in hex so that arbitrary bytes (invalid UTF-8, spaces) can be sent.
--bad-datagrams-per-second also sends datagrams that must be counted as rejections (an
unknown op line and a bad header), so that the rejection counters exist in /metrics.
Runs until --duration elapses or SIGTERM/SIGINT. Loopback by default; never raises on a
send error (ECONNREFUSED before hotkeyd binds is expected and ignored).
"""

import argparse
import signal
import socket
import sys
import time

DATAGRAMS_PER_SECOND = 50


def build_datagram(lines, hot_share, hot_key, bg_keys, cursor):
    """One datagram of `lines` events; `cursor` counts lines across datagrams so that
    every run of 100 consecutive lines holds exactly round(100 * hot_share) hot ones."""
    hot_per_100 = round(100 * hot_share)
    out = []
    for _ in range(lines):
        if cursor % 100 < hot_per_100:
            out.append(b"r " + hot_key)
        else:
            out.append(b"r bg:%d" % (cursor % bg_keys))
        cursor += 1
    return b"\n".join(out) + b"\n", cursor


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rate", type=int, default=3000, help="events per second")
    ap.add_argument("--hot-share", type=float, default=0.3)
    ap.add_argument("--hot-key-hex", default=b"hot:e2e".hex())
    ap.add_argument("--background-keys", type=int, default=1000)
    ap.add_argument("--bad-datagrams-per-second", type=int, default=0)
    ap.add_argument("--duration", type=float, default=0, help="seconds; 0 = until killed")
    args = ap.parse_args()

    hot_key = bytes.fromhex(args.hot_key_hex)
    if b"\n" in hot_key or not hot_key:
        sys.exit("hot key must be non-empty and contain no newline")
    lines = max(1, args.rate // DATAGRAMS_PER_SECOND)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dest = (args.host, args.port)
    cursor = 0
    period = 1.0 / DATAGRAMS_PER_SECOND
    start = time.monotonic()
    next_send = start
    sent = 0
    while not stop:
        now = time.monotonic()
        if args.duration and now - start >= args.duration:
            break
        if now < next_send:
            time.sleep(min(next_send - now, 0.05))  # paced: the load's steady rate
            continue
        datagram, cursor = build_datagram(lines, args.hot_share, hot_key, args.background_keys, cursor)
        try:
            sock.sendto(datagram, dest)
            if args.bad_datagrams_per_second and sent % max(1, DATAGRAMS_PER_SECOND // args.bad_datagrams_per_second) == 0:
                sock.sendto(b"x unknown-op-line\n", dest)  # events_rejected{reason="unknown_op"}
                sock.sendto(b"!v9\nr a\n", dest)           # datagrams_rejected{reason="bad_header"}
        except OSError:
            pass
        sent += 1
        next_send += period
        if now - next_send > 1.0:  # fell behind (suspended): do not burst to catch up
            next_send = now
    return 0


if __name__ == "__main__":
    sys.exit(main())
