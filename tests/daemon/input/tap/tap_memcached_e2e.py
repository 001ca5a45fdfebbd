#!/usr/bin/python3
"""tap_memcached_e2e.py: hotkeyd's tap beside a real memcached, driven by real clients.

Starts a real memcached on a free loopback port and a real hotkeyd with
--tap.interface=lo --tap.port=<port> --tap.protocol=memcached, then sends a Zipf key mix
with one celebrity key:
  - pymemcache: get, get_many (multi-key get), gets/cas, set (with and without noreply),
    set_many, incr, decr, delete, touch;
  - a raw socket (pymemcache 3.5 has no gat): gat and gats with several keys, and the meta
    commands mg, ms, md (quiet mode too), ma and mn.
The client's own record is the truth (reads: get, gets, gat, gats, mg, one per key; writes:
set, cas, incr, decr, delete, touch, ms, md, ma), and memcached's `stats` the second truth
(cmd_get, cmd_set, cmd_touch, incr/decr/delete hits and misses). Targets: the keys counted
within 1% of both; every key sent at 2% or more exported with its share within ±0.01 and
its write ratio within ±0.03; the whole write ratio within ±0.03; the commands counted
within 1% of the commands sent, whenever libpcap reports no drop.

Prints one JSON line of figures. Needs CAP_NET_RAW (root): fails without it.

Usage: tap_memcached_e2e.py HOTKEYD [CASE ...]
"""

import bisect
import json
import os
import random
import socket
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap_e2e_lib import (Hotkeyd, Memcached, Truth, check, check_shares,  # noqa: E402
                         hotkeyd_has_tap, log, require_capture, require_programs, run_cases,
                         within)

HOTKEYD = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
TAP_FLAGS = ["--tap.buffer-bytes=64MiB"]
CELEBRITY = "celebrity:mc"


class Zipf:
    def __init__(self, n, s, rng):
        self.rng = rng
        acc, self.cdf = 0.0, []
        for i in range(n):
            acc += 1.0 / (i + 1) ** s
            self.cdf.append(acc)

    def __call__(self):
        return bisect.bisect_left(self.cdf, self.rng.random() * self.cdf[-1])


class Raw:
    """A raw text-protocol connection: commands are queued, then sent with a closing mn and
    read until its MN (so quiet meta commands need no reply of their own)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.out = []

    def queue(self, line, data=None):
        self.out.append(line.encode() + b"\r\n" + (data + b"\r\n" if data is not None else b""))

    def flush(self):
        self.out.append(b"mn\r\n")
        self.s.sendall(b"".join(self.out))
        n, self.out = len(self.out), []
        buf = b""
        while not buf.endswith(b"MN\r\n"):
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise AssertionError(f"memcached closed the raw connection: {buf[-200:]!r}")
            buf += chunk
        return n, buf


class McMix:
    """The workload and its record. Keys mc:<rank> follow Zipf(1.0) over 5,000 keys and
    counters ctr:<rank> over 100; a keyed command hits the celebrity with `celebrity_p`;
    a command is a write with `write_p`."""

    def __init__(self, seed, celebrity_p=0.31, write_p=0.4):
        self.rng = random.Random(seed)
        self.zipf, self.counters = Zipf(5000, 1.0, self.rng), Zipf(100, 1.0, self.rng)
        self.celebrity_p, self.write_p = celebrity_p, write_p
        self.truth = Truth()
        self.gat_keys = 0  # counted by memcached as cmd_touch, by the tap as reads
        self.value = b"v" * 40

    def key(self):
        return CELEBRITY if self.rng.random() < self.celebrity_p else f"mc:{self.zipf()}"

    def keys(self, n):
        out = []
        while len(out) < n:
            k = self.key()
            if k not in out:
                out.append(k)
        return out

    def preload(self, client):
        """Every counter exists (incr/decr need a number) and the celebrity has a value."""
        keys = [f"ctr:{i}" for i in range(100)]
        client.set_many({k: b"1000000" for k in keys})
        client.set(CELEBRITY, self.value)
        self.truth.write(*keys, CELEBRITY)
        self.truth.commands += len(keys) + 1

    def pymemcache_op(self, c):
        t, v, rng = self.truth, self.value, self.rng
        write = rng.random() < self.write_p
        kind = rng.random()
        if not write:
            if kind < 0.45:
                k = self.key()
                c.get(k)
                t.read(k)
            elif kind < 0.85:
                keys = self.keys(rng.randint(2, 5))
                c.get_many(keys)
                t.read(*keys)
            else:
                k = self.key()
                _, token = c.gets(k)
                t.read(k)
                if token is not None and rng.random() < 0.5:  # gets then cas: a write
                    t.commands += 1
                    c.cas(k, v, token)
                    t.write(k)
            t.commands += 1
            return
        if kind < 0.35:
            k = self.key()
            c.set(k, v, noreply=rng.random() < 0.3)
            t.write(k)
            t.commands += 1
        elif kind < 0.55:
            keys = self.keys(rng.randint(2, 4))
            c.set_many({k: v for k in keys})
            t.write(*keys)
            t.commands += len(keys)
        elif kind < 0.75:
            k = f"ctr:{self.counters()}"
            c.incr(k, 1) if rng.random() < 0.5 else c.decr(k, 1)
            t.write(k)
            t.commands += 1
        elif kind < 0.9:
            k = self.key()
            c.touch(k, 0)
            t.write(k)
            t.commands += 1
        else:
            k = self.key()
            if k == CELEBRITY:  # keep the celebrity readable; a delete of it is still a write
                c.delete(k)
                c.set(k, v)
                t.write(k, k)
                t.commands += 2
            else:
                c.delete(k)
                t.write(k)
                t.commands += 1

    def raw_batch(self, raw, n):
        """n gat/gats/meta commands on the raw connection (and its closing mn)."""
        t, rng = self.truth, self.rng
        for _ in range(n):
            write = rng.random() < self.write_p
            kind = rng.random()
            if not write:
                if kind < 0.3:
                    keys = self.keys(rng.randint(2, 4))
                    raw.queue(f"gat 0 {' '.join(keys)}")
                    self.gat_keys += len(keys)
                elif kind < 0.45:
                    keys = self.keys(rng.randint(1, 3))
                    raw.queue(f"gats 0 {' '.join(keys)}")
                    self.gat_keys += len(keys)
                else:
                    keys = self.keys(1)
                    raw.queue(f"mg {keys[0]} v f t")
                t.read(*keys)
            elif kind < 0.5:
                k = self.key()
                raw.queue(f"ms {k} {len(self.value)} T0", self.value)
                t.write(k)
            elif kind < 0.75:
                k = f"ctr:{self.counters()}"
                raw.queue(f"ma {k}" if rng.random() < 0.5 else f"ma {k} MD")
                t.write(k)
            else:
                k = self.key()
                if k == CELEBRITY:
                    raw.queue(f"ms {k} {len(self.value)}", self.value)
                else:
                    raw.queue(f"md {k} q")  # quiet: no reply on success
                t.write(k)
            t.commands += 1
        sent, _ = raw.flush()
        t.commands += 1  # the mn
        return sent


def server_keys(s0, s1):
    """Key touches in memcached's own counters between two `stats`."""
    d = {k: s1.get(k, 0) - s0.get(k, 0) for k in s1}
    return {"cmd_get": d["cmd_get"], "cmd_set": d["cmd_set"], "cmd_touch": d["cmd_touch"],
            "arith": d["incr_hits"] + d["incr_misses"] + d["decr_hits"] + d["decr_misses"],
            "delete": d["delete_hits"] + d["delete_misses"]}


def case_mix(work):
    from pymemcache.client.base import Client
    m = Memcached(work)
    d = Hotkeyd(HOTKEYD, work, m.port, "memcached", *TAP_FLAGS)
    d.wait_capturing(lambda: m.stats())
    before = d.settled()
    s0 = m.stats()  # this `stats` is counted in the next snapshot
    mix = McMix(seed=7)
    client = Client(("127.0.0.1", m.port), default_noreply=False, timeout=10)
    raw = Raw(m.port)
    t0 = time.monotonic()
    mix.preload(client)
    while mix.truth.total() < 25000:
        for _ in range(10):
            mix.pymemcache_op(client)
        mix.raw_batch(raw, 60)
    elapsed = time.monotonic() - t0
    after = d.settled()
    s1 = m.stats()
    delta = after - before
    t = mix.truth
    srv = server_keys(s0, s1)
    srv_reads = srv["cmd_get"] + mix.gat_keys
    srv_writes = srv["cmd_set"] + srv["arith"] + srv["delete"] + srv["cmd_touch"] - mix.gat_keys
    log(f"  sent {t.commands} commands, {t.total()} key touches in {elapsed:.1f} s; celebrity "
        f"share {t.share(CELEBRITY):.4f}, write ratio {t.write_ratio():.4f}; memcached: {srv}")
    check(abs(t.share(CELEBRITY) - 0.25) < 0.03, "the celebrity's share is about 0.25")
    check(srv_reads == t.total_reads() and srv_writes == t.total_writes(),
          f"memcached's stats agree with the client's record ({srv_reads} reads, "
          f"{srv_writes} writes)")
    if delta.drops():
        log(f"  note: libpcap reports {delta.drops()} drops: totals not compared")
        check(delta.read_keys <= t.total_reads() and delta.write_keys <= t.total_writes(),
              "no overcount despite drops")
    else:
        check(within(delta.read_keys, t.total_reads(), 0.01),
              f"{delta.read_keys} read keys counted vs {t.total_reads()} sent and {srv_reads} in "
              f"stats (within 1%)")
        check(within(delta.write_keys, t.total_writes(), 0.01),
              f"{delta.write_keys} write keys counted vs {t.total_writes()} sent and "
              f"{srv_writes} in stats (within 1%)")
        wire = t.commands + 1  # the first `stats`
        check(within(delta.commands, wire, 0.01),
              f"{delta.commands} commands counted vs {wire} sent (within 1%)")
    counted_ratio = delta.write_keys / max(1, delta.read_keys + delta.write_keys)
    check(abs(counted_ratio - t.write_ratio()) <= 0.03,
          f"write ratio counted {counted_ratio:.4f} vs {t.write_ratio():.4f} sent (±0.03)")
    keys = check_shares(d, t)
    check(d.alive(), "hotkeyd still serves /metrics and /-/healthy")
    print(json.dumps({"case": "mix", "commands": t.commands, "touches": t.total(),
                      "seconds": round(elapsed, 2), "stats": srv,
                      "celebrity_share_sent": round(t.share(CELEBRITY), 4),
                      "celebrity_share_exported": keys[CELEBRITY]["share"],
                      "write_ratio_sent": round(t.write_ratio(), 4),
                      "write_ratio_counted": round(counted_ratio, 4),
                      "commands_counted": delta.commands, "drops": delta.drops()}))


CASES = [("mix", case_mix)]

if __name__ == "__main__":
    require_capture("tap_memcached_e2e")
    require_programs("memcached")
    try:
        import pymemcache  # noqa: F401
    except ImportError:
        sys.exit(f"FAIL: {sys.executable} has no pymemcache module: install python3-pymemcache "
                 f"and run with Debian's /usr/bin/python3")
    if not hotkeyd_has_tap(HOTKEYD):
        sys.exit(f"FAIL: {HOTKEYD} has no --tap.interface flag (built without the tap?)")
    run_cases("tap-memcached", CASES, sys.argv[2:])
