#!/usr/bin/python3
"""tap_redis_e2e.py: hotkeyd's tap beside a real redis-server, driven by real clients.

Each case starts a real redis-server on a free loopback port and a real hotkeyd with
--tap.interface=lo --tap.port=<port> --tap.protocol=redis, sends real traffic and compares
what the tap counted with the truth:
  benchmark    redis-benchmark GET/SET with random keys (-r), unpipelined and -P 16: the
               commands counted are within 1% of INFO commandstats' deltas, GETs are reads
               and SETs writes (also within 1%), whenever libpcap reports no drop
  mix          redis-py with a Zipf key mix and one celebrity key: GET/SET, MGET/MSET,
               HGET/HSET/HINCRBY, EVAL and EVAL_RO with keys, MULTI/EXEC transactions and
               pipelines, over a requirepass server (AUTH) plus a RESP3 connection (HELLO 3
               AUTH) sending inline commands. The client's own record is the truth: every
               key it sent at 2% or more is exported with its share within ±0.01 and its
               write ratio within ±0.03, the whole write ratio within ±0.03, the commands
               within 1% of commandstats (script-internal calls taken out); the password
               (and a wrong one tried) never reach /metrics, /api/v1/top or the log
  replication  a second redis-server replicating the tapped one: its PSYNC/REPLCONF link is
               excluded (the excluded counter rises with each REPLCONF ACK) and the writes
               propagated to it are not counted again: the keys counted are the client's

Prints one JSON line of figures per case. Needs CAP_NET_RAW (root): fails without it.

Usage: tap_redis_e2e.py HOTKEYD [CASE ...]
"""

import bisect
import json
import os
import random
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap_e2e_lib import (Hotkeyd, RedisServer, Truth, check, check_no_secret,  # noqa: E402
                         check_shares, hotkeyd_has_tap, log, require_capture,
                         require_programs, run_cases, wait_until, within)

HOTKEYD = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
# A capture ring large enough that the traffic on loopback drops nothing.
TAP_FLAGS = ["--tap.buffer-bytes=64MiB"]
# redis-benchmark's frames are small (16 pipelined SETs of 3-byte values are < 1 KiB): a
# 4 KiB snap length keeps the ring's slots small (libpcap's immediate mode gives every
# frame a slot of the snap length, 64 KiB on lo by default), so the 64 MiB ring holds
# 16,000 frames instead of 1,000 and the unpipelined run, 40,000 packets a second, is not
# dropped while the tap's thread waits for a busy core.
BENCHMARK_FLAGS = ["--tap.snaplen=4096"]


def counted_commands(cs0, cs1, exclude=()):
    """Commandstats' delta summed over commands, less those in `exclude`."""
    return sum(v - cs0.get(k, 0) for k, v in cs1.items() if k not in exclude)


def snapshot(d, server, client, since=None, less=0, exclude=()):
    """(tap counts, commandstats) with the INFO that reads commandstats after the tap's
    read: the tap then counts each INFO in the next snapshot, as commandstats does.
    `since`, the (counts, commandstats) of an earlier snapshot: first waits until the tap
    has counted the commands the server ran since then (less `less` it never sees on the
    wire, commands in `exclude` left out), as a quiet spell alone does not show that a tap
    slowed down (a sanitized build at the lowest priority) has drained its ring."""
    if since:
        base, cs0 = since
        d.wait_counted(base, counted_commands(cs0, server.commandstats(client), exclude) - less)
    counts = d.settled()
    return counts, server.commandstats(client)


def drop_note(delta):
    if delta.drops():
        log(f"  note: libpcap reports {delta.drops()} dropped packets: totals not compared "
            f"(only that nothing was counted twice)")
        return True
    return False


# ------------------------------------------------------------------------------ benchmark

def case_benchmark(work):
    r = RedisServer(work)
    d = Hotkeyd(HOTKEYD, work, r.port, "redis", *TAP_FLAGS, *BENCHMARK_FLAGS)
    c = r.client()
    d.wait_capturing(c.ping)
    figures = []
    for pipeline, n in ((1, 20000), (16, 100000)):
        before, cs0 = snapshot(d, r, c)
        out = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(r.port), "-t",
                              "set,get", "-n", str(n), "-r", "100000", "-P", str(pipeline), "-c",
                              "20", "-q"], capture_output=True, text=True, timeout=120)
        check(out.returncode == 0, f"redis-benchmark -P {pipeline} ran: {out.stderr.strip()}")
        d.wait_counted(before, 2 * n)  # its SETs and GETs
        after, cs1 = snapshot(d, r, c)
        delta = after - before
        sets, gets = cs1.get("set", 0) - cs0.get("set", 0), cs1.get("get", 0) - cs0.get("get", 0)
        total = counted_commands(cs0, cs1)
        check(sets >= n and gets >= n, f"-P {pipeline}: the server ran {sets} SETs and {gets} GETs")
        if drop_note(delta):
            check(delta.commands <= total and delta.read_keys <= gets and
                  delta.write_keys <= sets, f"-P {pipeline}: no overcount despite drops")
        else:
            check(within(delta.commands, total, 0.01),
                  f"-P {pipeline}: {delta.commands} commands counted vs {total} in commandstats "
                  f"(within 1%)")
            check(within(delta.read_keys, gets, 0.01),
                  f"-P {pipeline}: {delta.read_keys} read keys vs {gets} GETs (within 1%)")
            check(within(delta.write_keys, sets, 0.01),
                  f"-P {pipeline}: {delta.write_keys} write keys vs {sets} SETs (within 1%)")
        figures.append({"pipeline": pipeline, "commandstats": total, "counted": delta.commands,
                        "gets": gets, "reads": delta.read_keys, "sets": sets,
                        "writes": delta.write_keys, "packets": delta.packets,
                        "drops": delta.drops(), "resyncs": delta.resyncs})
    check(d.alive(), "hotkeyd still serves /metrics and /-/healthy")
    print(json.dumps({"case": "benchmark", "runs": figures}))


# ------------------------------------------------------------------------------ mix

class Zipf:
    """Ranks 0..n-1 with P(rank) proportional to 1 / (rank + 1)^s."""

    def __init__(self, n, s, rng):
        self.rng = rng
        acc, self.cdf = 0.0, []
        for i in range(n):
            acc += 1.0 / (i + 1) ** s
            self.cdf.append(acc)

    def __call__(self):
        return bisect.bisect_left(self.cdf, self.rng.random() * self.cdf[-1])


CELEBRITY = "celebrity:profile"
EVAL_WRITE = "redis.call('SET', KEYS[1], ARGV[1]) redis.call('SET', KEYS[2], ARGV[1]) return 1"
EVAL_READ = "return redis.call('GET', KEYS[1])"


class Mix:
    """The redis-py workload and its record. String keys str:<rank> and hash keys
    hash:<rank> follow Zipf(1.0) over 10,000 and 1,000 keys; string commands hit the
    celebrity key with probability `celebrity_p`; a command is a write with `write_p`."""

    def __init__(self, seed, celebrity_p=0.355, write_p=0.3):
        self.rng = random.Random(seed)
        self.strings, self.hashes = Zipf(10000, 1.0, self.rng), Zipf(1000, 1.0, self.rng)
        self.celebrity_p, self.write_p = celebrity_p, write_p
        self.truth = Truth()
        self.script_calls = 0  # redis.call()s inside scripts: in commandstats, not on the wire
        self.value = "v" * 32

    def string_key(self):
        return CELEBRITY if self.rng.random() < self.celebrity_p else f"str:{self.strings()}"

    def string_keys(self, n):
        keys = []
        while len(keys) < n:
            k = self.string_key()
            if k not in keys:
                keys.append(k)
        return keys

    def one(self, p):
        """Queues one command on p (a client, a pipeline or a transaction) and records it."""
        write = self.rng.random() < self.write_p
        kind = self.rng.random()
        t, v = self.truth, self.value
        if kind < 0.4:
            k = self.string_key()
            (p.set(k, v), t.write(k)) if write else (p.get(k), t.read(k))
        elif kind < 0.6:
            keys = self.string_keys(self.rng.randint(2, 4))
            if write:
                p.mset({k: v for k in keys})
                t.write(*keys)
            else:
                p.mget(keys)
                t.read(*keys)
        elif kind < 0.85:
            h = f"hash:{self.hashes()}"
            if not write:
                p.hget(h, "f")
                t.read(h)
            elif self.rng.random() < 0.5:
                p.hset(h, "f", v)
                t.write(h)
            else:
                p.hincrby(h, "n", 1)
                t.write(h)
        else:
            if write:  # EVAL's keys are RW: writes
                keys = self.string_keys(2)
                p.eval(EVAL_WRITE, 2, *keys, v)
                t.write(*keys)
                self.script_calls += 2
            else:  # EVAL_RO's keys are RO: reads
                k = self.string_key()
                p.execute_command("EVAL_RO", EVAL_READ, 1, k)
                t.read(k)
                self.script_calls += 1

    def run(self, client, touches):
        """Batches until `touches` keys were sent: single commands, pipelines of 20 and
        MULTI/EXEC transactions of 2 to 6 (their queued commands are what counts)."""
        batches = {"single": 0, "pipeline": 0, "multi": 0}
        while self.truth.total() < touches:
            mode = self.rng.random()
            if mode < 0.15:
                self.one(client)
                batches["single"] += 1
            elif mode < 0.7:
                p = client.pipeline(transaction=False)
                for _ in range(20):
                    self.one(p)
                p.execute()
                batches["pipeline"] += 1
            else:
                p = client.pipeline(transaction=True)
                for _ in range(self.rng.randint(2, 6)):
                    self.one(p)
                p.execute()
                batches["multi"] += 1
        return batches


def resp3_session(port, password, mix, n):
    """A raw connection: HELLO 3 with AUTH, then `n` inline GETs of the celebrity (reads),
    then PING; returns once PONG is back. Also a wrong password, rejected."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"AUTH default wrong-" + password.encode() + b"\r\n")
    s.sendall(f"HELLO 3 AUTH default {password} SETNAME tap-e2e\r\n".encode())
    for _ in range(n):
        s.sendall(f"GET {CELEBRITY}\r\n".encode())
    mix.truth.read(*[CELEBRITY] * n)
    s.sendall(b"PING\r\n")
    buf = b""
    while b"+PONG\r\n" not in buf:
        chunk = s.recv(65536)
        check(chunk, "the RESP3 connection stays open")
        buf += chunk
    s.close()
    check(b"WRONGPASS" in buf and b"%7" in buf, "the wrong password was refused, HELLO 3 answered")
    return n + 3


def case_mix(work):
    password = "tap-e2e-" + os.urandom(8).hex()
    r = RedisServer(work, password=password)
    d = Hotkeyd(HOTKEYD, work, r.port, "redis", *TAP_FLAGS, "--log.level=debug")
    c = r.client()
    d.wait_capturing(c.ping)
    before, cs0 = snapshot(d, r, c)
    check(before.read_keys == 0 and before.write_keys == 0, "no key counted before the mix")
    mix = Mix(seed=11)
    t0 = time.monotonic()
    batches = mix.run(r.client(), touches=30000)
    resp3 = resp3_session(r.port, password, mix, 200)
    batches.update(mix.run(r.client(), touches=36000))
    elapsed = time.monotonic() - t0
    after, cs1 = snapshot(d, r, c, since=(before, cs0), less=mix.script_calls)
    delta = after - before
    t = mix.truth
    log(f"  sent {t.total()} key touches in {elapsed:.1f} s ({batches}); celebrity share "
        f"{t.share(CELEBRITY):.4f}, write ratio {t.write_ratio():.4f}")
    check(abs(t.share(CELEBRITY) - 0.25) < 0.02, "the celebrity's share is about 0.25")
    check(abs(t.write_ratio() - 0.3) < 0.03, "the write ratio sent is about 0.3")
    wire = counted_commands(cs0, cs1) - mix.script_calls
    dropped = drop_note(delta)
    if not dropped:
        check(within(delta.commands, wire, 0.01),
              f"{delta.commands} commands counted vs {wire} in commandstats less "
              f"{mix.script_calls} script-internal calls (within 1%)")
        check(within(delta.read_keys, t.total_reads(), 0.01),
              f"{delta.read_keys} read keys counted vs {t.total_reads()} sent (within 1%)")
        check(within(delta.write_keys, t.total_writes(), 0.01),
              f"{delta.write_keys} write keys counted vs {t.total_writes()} sent (within 1%)")
    counted_ratio = delta.write_keys / max(1, delta.read_keys + delta.write_keys)
    check(abs(counted_ratio - t.write_ratio()) <= 0.03,
          f"write ratio counted {counted_ratio:.4f} vs {t.write_ratio():.4f} sent (±0.03)")
    keys = check_shares(d, t)
    check(d.alive(), "hotkeyd still serves /metrics and /-/healthy")
    check_no_secret(d, [password, "wrong-" + password])
    print(json.dumps({"case": "mix", "touches": t.total(), "seconds": round(elapsed, 2),
                      "batches": batches, "resp3_commands": resp3,
                      "celebrity_share_sent": round(t.share(CELEBRITY), 4),
                      "celebrity_share_exported": keys[CELEBRITY]["share"],
                      "write_ratio_sent": round(t.write_ratio(), 4),
                      "write_ratio_counted": round(counted_ratio, 4),
                      "commands_wire": wire, "commands_counted": delta.commands,
                      "drops": delta.drops()}))


# ------------------------------------------------------------------------------ replication

def replica_in_sync(master, replica):
    info = replica.client().info("replication")
    if info.get("master_link_status") != "up":
        return False
    return info.get("slave_repl_offset") == master.client().info("replication")["master_repl_offset"]


def case_replication(work):
    m = RedisServer(work, name="master")
    d = Hotkeyd(HOTKEYD, work, m.port, "redis", *TAP_FLAGS)
    c = m.client()
    d.wait_capturing(c.ping)
    before, cs0 = snapshot(d, m, c)
    replica = RedisServer(work, "--replicaof", "127.0.0.1", str(m.port), name="replica")
    truth = Truth()
    p = c.pipeline(transaction=False)
    for i in range(3000):
        k = f"repl:{i % 500}"
        if i % 3 == 0:
            p.get(k)
            truth.read(k)
        else:
            p.set(k, "x" * 64)
            truth.write(k)
    for i in range(0, 500, 5):
        keys = [f"repl:{j}" for j in range(i, i + 5)]
        p.mset({k: "y" for k in keys})
        truth.write(*keys)
    p.execute()
    wait_until(lambda: replica_in_sync(m, replica), 20, "the replica to catch up")
    check(replica.client().dbsize() == 500, "the replica holds the 500 keys written")
    mid = d.counts()
    wait_until(lambda: d.counts().excluded_requests > mid.excluded_requests, 10,
               "the replica's next REPLCONF ACK to be excluded")
    replication = ("replconf", "psync", "sync")
    after, cs1 = snapshot(d, m, c, since=(before, cs0), exclude=replication)
    delta = after - before
    link = counted_commands(cs0, cs1) - counted_commands(cs0, cs1, exclude=replication)
    check(link > 0, f"the master served {link} replication-link commands")
    check(delta.excluded_requests > 0,
          f"{delta.excluded_requests} replication requests excluded")
    if not drop_note(delta):
        check(delta.write_keys == truth.total_writes(),
              f"{delta.write_keys} write keys counted == {truth.total_writes()} written by the "
              f"client (the writes propagated to the replica are not counted again)")
        check(delta.read_keys == truth.total_reads(),
              f"{delta.read_keys} read keys counted == {truth.total_reads()} read")
        wire = counted_commands(cs0, cs1, exclude=replication)
        check(within(delta.commands, wire, 0.01),
              f"{delta.commands:.0f} commands counted vs {wire} non-replication commands in "
              f"commandstats (within 1%)")
    exported = d.keys()
    check(all(k.startswith("repl:") for k in exported),
          f"only the client's keys are exported ({len(exported)} keys)")
    check(d.alive(), "hotkeyd still serves /metrics and /-/healthy")
    print(json.dumps({"case": "replication", "writes": truth.total_writes(),
                      "reads": truth.total_reads(), "counted_writes": delta.write_keys,
                      "counted_reads": delta.read_keys, "link_commands": link,
                      "excluded": delta.excluded_requests, "drops": delta.drops()}))


CASES = [("benchmark", case_benchmark), ("mix", case_mix), ("replication", case_replication)]

if __name__ == "__main__":
    require_capture("tap_redis_e2e")
    require_programs("redis-server", "redis-benchmark")
    try:
        import redis  # noqa: F401
    except ImportError:
        sys.exit(f"FAIL: {sys.executable} has no redis module: install python3-redis and run "
                 f"with Debian's /usr/bin/python3")
    if not hotkeyd_has_tap(HOTKEYD):
        sys.exit(f"FAIL: {HOTKEYD} has no --tap.interface flag (built without the tap?)")
    run_cases("tap-redis", CASES, sys.argv[2:])
