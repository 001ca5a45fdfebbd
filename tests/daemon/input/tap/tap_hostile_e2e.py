#!/usr/bin/python3
"""tap_hostile_e2e.py: hotkeyd's tap against hostile traffic on a real redis-server's port.

The servers reject most of this traffic (that is fine: the point is hotkeyd). Around each
hostile case a well-behaved client sends GETs of a celebrity key on its own connection,
and each case checks that the right counter rises, that the good traffic (and any good
request inside the hostile one) is counted exactly, that hotkeyd still serves /metrics
and /-/healthy, and that its RSS stays under a bound derived from its flags
(hotkey_tap_memory_bound_bytes, which must equal --tap.max-flows x
(--tap.flow-buffer-bytes + 1 KiB) + 112 KiB (client hosts) + 2 x --tap.buffer-bytes, plus a
fixed allowance):
  midstream  a connection that sent half a SET before the tap started: the rest (a value
             holding CRLFs, bulk headers and an inline GET) resyncs with no misparsed key, and
             the GETs after it on the same connection count
  garbage    64 KiB of random bytes, then a malformed array header: protocol errors and
             unknown commands rise, no key is counted
  bulk       a bulk length of 2^62, as a key and as a value: counted, never waited for
  array      an array of 2^31 elements: counted, not allocated
  split      a GET sent one byte per TCP segment (TCP_NODELAY, a pause after each byte):
             counted exactly once
  flood      100,000 concurrent connections (--tap.max-flows=1000) over six redis-servers
             on the tapped port (each on its own loopback address), from several source
             addresses: evictions are counted, the flow table and RSS
             stay bounded, and a client that keeps sending through the flood is counted
             exactly (the least recently active flows are the ones evicted)

The flood holds 100,000 sockets on each side: as many processes as the open-file limit
needs (RLIMIT_NOFILE's hard limit per process), each server with maxclients to match.
When the limits allow fewer, the case says how many flows it reached and asserts on those
(at least 20 x --tap.max-flows).

Prints one JSON line of figures per case. Needs CAP_NET_RAW (root): fails without it.

Usage: tap_hostile_e2e.py HOTKEYD [CASE ...]
"""

import json
import multiprocessing
import os
import random
import resource
import socket
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap_e2e_lib import (MIB, SANITIZED, Hotkeyd, RedisServer, check,  # noqa: E402
                         hotkeyd_has_tap, log, require_capture, require_programs, run_cases,
                         settle, wait_until)

HOTKEYD = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
MAX_FLOWS = 1000
FLOW_BUFFER = 4096
RING = 32 * MIB
FLOW_STATE = 1024  # TapOptions::kFlowStateBytes
CLIENT_HOSTS = 112 * 1024  # TapOptions::kClientHostsBytes
TAP_FLAGS = [f"--tap.max-flows={MAX_FLOWS}", f"--tap.flow-buffer-bytes={FLOW_BUFFER}",
             f"--tap.buffer-bytes={RING}", "--tap.idle-timeout=5m"]
# The flood's frames are small (handshakes, and the steady client's GETs of under 100 bytes
# with their headers): a 256-byte snap length keeps the ring's frame slots small (libpcap's
# immediate mode gives each frame a slot of the snap length, 64 KiB on lo by default), so
# the ring holds about 90,000 of its 400,000 packets while the tap's thread waits for a
# busy core. The other cases keep the default: their 64 KiB segments must not be cut.
FLOOD_FLAGS = ["--tap.snaplen=256"]
# The --help's worst case: libpcap maps the ring at twice --tap.buffer-bytes in immediate mode.
BOUND = MAX_FLOWS * (FLOW_BUFFER + FLOW_STATE) + CLIENT_HOSTS + 2 * RING
# What besides the tap may grow while the cases run: the HTTP server's buffers, thread
# stacks touched, allocator slack. The tracker's memory is fixed at start.
ALLOWANCE = 24 * MIB
CELEBRITY = b"celebrity:good"
FLOOD_FLOWS = 100_000


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class GoodClient:
    """A well-behaved client on its own connection: GETs of the celebrity key, each
    answered before the next batch; `sent` is the truth."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sent = 0

    # GETs per write (a pipeline); 1 keeps every segment under a small snap length.
    batch = 50

    def send(self, n):
        while n > 0:
            k = min(n, self.batch)
            self.s.sendall(resp("GET", CELEBRITY) * k)
            self.sent += k
            self._read_replies(k)
            n -= k

    def _read_replies(self, n):
        # The celebrity holds "hello": each reply is "$5\r\nhello\r\n".
        buf = b""
        while buf.count(b"$5\r\nhello\r\n") < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise AssertionError("redis closed the good client's connection")
            buf += chunk

    def close(self):
        self.s.close()


class Guard:
    """The checks every case ends with: the deltas of the tap's counters since the last
    mark, the good client's GETs exactly counted, hotkeyd alive, RSS under the bound."""

    def __init__(self, d, good):
        self.d, self.good = d, good
        self.base = d.settled()
        self.good_base = good.sent
        self.rss0 = d.rss()
        self.rss_peak = self.rss0
        bound = self.base.memory_bound_bytes
        check(bound == BOUND, f"hotkey_tap_memory_bound_bytes {bound:.0f} == {MAX_FLOWS} x "
                              f"({FLOW_BUFFER} + {FLOW_STATE}) + 2 x {RING}")

    def sample_rss(self):
        self.rss_peak = max(self.rss_peak, self.d.rss())

    def end(self, what, extra_reads=0, extra_writes=0):
        self.good.send(50)  # good traffic after the case too
        now = self.d.settled()
        delta = now - self.base
        good = self.good.sent - self.good_base
        check(delta.truncated == 0, f"{what}: no frame cut by the snap length")
        if delta.drops():
            # Counted (the drop counter is the count), but the traffic lost cannot be exact.
            log(f"  note: {what}: libpcap dropped {delta.drops():.0f} packets (counted): "
                f"checking only that nothing was counted twice")
            check(delta.read_keys <= good + extra_reads and delta.write_keys <= extra_writes,
                  f"{what}: {delta.read_keys:.0f} reads, {delta.write_keys:.0f} writes counted, "
                  f"at most the {good + extra_reads} and {extra_writes} sent")
        else:
            check(delta.read_keys == good + extra_reads,
                  f"{what}: {delta.read_keys:.0f} reads counted == {good} good GETs"
                  + (f" + {extra_reads}" if extra_reads else ""))
            check(delta.write_keys == extra_writes,
                  f"{what}: {delta.write_keys:.0f} writes counted == {extra_writes}")
        check(self.d.alive(), f"{what}: hotkeyd still serves /metrics and /-/healthy")
        self.sample_rss()
        check(SANITIZED or self.rss_peak - self.rss0 <= BOUND + ALLOWANCE,
              f"{what}: RSS {self.rss0 / MIB:.1f} MiB at the start, peak {self.rss_peak / MIB:.1f}"
              f" MiB (growth within {BOUND / MIB:.1f} MiB bound + {ALLOWANCE / MIB:.0f} MiB)")
        check(now.memory_bytes <= now.memory_bound_bytes,
              f"{what}: tap memory {now.memory_bytes:.0f} <= bound {now.memory_bound_bytes:.0f}")
        self.base, self.good_base = now, self.good.sent
        return delta


def raw(port, data, nodelay=False):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        s.sendall(data)
    except OSError:
        pass  # the server may close first: fine
    return s


def drain_close(s):
    """Reads until the server closes (it rejects the hostile request) or 2 s pass."""
    s.settimeout(2)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
    s.close()


def one_shot(r, data):
    drain_close(raw(r.port, data))


# ------------------------------------------------------------------------------ cases

def case_midstream(work):
    r = RedisServer(work)
    r.client().set(CELEBRITY, b"hello")
    # What follows the cut looks like protocol: bulk headers and an inline command. Only an
    # array header at a request boundary may resync the stream (a value holding a whole
    # RESP request cannot be told from one, and is not tried).
    value = (b"v" * 40 + b"\r\n$4\r\nfake\r\n$9\r\nmid:fake1\r\n" + b"w" * 20 +
             b"\r\nGET mid:fake2\r\n" + b"x" * 20)
    head = b"*3\r\n$3\r\nSET\r\n$8\r\nmid:half\r\n$%d\r\n" % len(value)
    cut = len(value) // 2
    mid = raw(r.port, head + value[:cut], nodelay=True)
    d = Hotkeyd(HOTKEYD, work, r.port, "redis", *TAP_FLAGS)
    good = GoodClient(r.port)
    d.wait_capturing(lambda: good.send(1))
    g = Guard(d, good)
    mid.sendall(value[cut:] + b"\r\n")
    mid.sendall(resp("GET", "mid:after") * 10)
    seen = b""
    while seen.count(b"$") < 10:
        chunk = mid.recv(65536)
        check(chunk, "redis keeps the mid-command connection")
        seen += chunk
    check(seen.startswith(b"+OK\r\n"), "redis stored the SET whose start the tap missed")
    mid.close()
    delta = g.end("midstream", extra_reads=10)
    check(delta.joined_midstream >= 1, f"{delta.joined_midstream:.0f} flow joined mid-stream")
    keys = d.keys()
    check("mid:after" in keys and not any(k.startswith(("mid:fake", "mid:half", "fake"))
                                          for k in keys),
          f"the GETs after it count and nothing in the value is a key ({sorted(keys)})")
    print(json.dumps({"case": "midstream", "joined_midstream": delta.joined_midstream,
                      "resyncs": delta.resyncs, "protocol_errors": delta.protocol_errors}))


def hostile_daemon(work, r, *flags):
    d = Hotkeyd(HOTKEYD, work, r.port, "redis", *TAP_FLAGS, *flags)
    good = GoodClient(r.port)
    d.wait_capturing(lambda: good.send(1))
    return d, good


def garbage(r, g):
    rng = random.Random(20261201)
    g.good.send(50)
    one_shot(r, rng.randbytes(64 * 1024))
    one_shot(r, b"*abc\r\n$3\r\nGET\r\n$1\r\nk\r\n")
    one_shot(r, b"\x00\x01\x02\xff\xfe\r\n*-7\r\n*2\r\n$x\r\n")
    g.good.send(50)
    delta = g.end("garbage")
    check(delta.protocol_errors >= 1,
          f"{delta.protocol_errors:.0f} protocol errors, {delta.unknown_commands:.0f} unknown "
          f"commands, {delta.resyncs:.0f} resyncs counted")
    return {"protocol_errors": delta.protocol_errors, "unknown_commands": delta.unknown_commands,
            "resyncs": delta.resyncs}


def bulk(r, g):
    big = 1 << 62
    g.good.send(50)
    one_shot(r, b"*2\r\n$3\r\nGET\r\n$%d\r\n" % big + b"k" * 1000)          # as the key
    one_shot(r, b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n" % big + b"v" * 1000)  # as the value
    g.good.send(50)
    delta = g.end("bulk")
    check(delta.protocol_errors + delta.keys_dropped >= 2,
          f"both 2^62 bulk lengths counted: {delta.protocol_errors:.0f} protocol errors, "
          f"{delta.keys_dropped:.0f} keys dropped")
    return {"protocol_errors": delta.protocol_errors, "keys_dropped": delta.keys_dropped}


def array(r, g):
    g.good.send(50)
    one_shot(r, b"*2147483648\r\n" + resp("GET", "arr:key")[4:] + b"$1\r\nx\r\n" * 1000)
    g.good.send(50)
    delta = g.end("array")
    check(delta.protocol_errors >= 1,
          f"the 2^31-element array counted: {delta.protocol_errors:.0f} protocol errors "
          f"(all changes: {delta})")
    return {"protocol_errors": delta.protocol_errors}


def split(r, g):
    g.good.send(50)
    request = resp("GET", "split:key")
    s = raw(r.port, b"", nodelay=True)
    before = g.d.counts().packets
    for i in range(len(request)):
        s.send(request[i:i + 1])
        time.sleep(0.004)  # on purpose: one byte a packet (Nagle off, a pause between sends)
    s.settimeout(5)
    check(s.recv(100) == b"$-1\r\n", "redis answered the byte-split GET")
    s.close()
    g.good.send(50)
    packets = g.d.settled().packets - before
    delta = g.end("split", extra_reads=1)
    check(packets >= len(request), f"{packets:.0f} packets for a {len(request)}-byte request")
    check("split:key" in g.d.keys(), "split:key is exported")
    return {"bytes": len(request), "packets": packets, "commands": delta.commands}


# --- flood

# Connections per source address: connect() picks from the even half of the ephemeral
# range first (about 14,000 ports here) and searches ever longer beyond it, so each
# source address serves a few thousand only.
PER_SOURCE = 4000


def _flood_worker(host, port, net, n, ready, done):
    """Holds n connections to host:port from 127.<net>.0.x, PER_SOURCE per address, until
    `done` is set."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks, failed = [], 0
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_IP, 24, 1)  # IP_BIND_ADDRESS_NO_PORT: pick the port at connect
        try:
            s.bind((f"127.{net}.0.{1 + i // PER_SOURCE}", 0))
            s.connect((host, port))
            socks.append(s)
        except OSError:
            s.close()
            failed += 1
    ready.put((len(socks), failed))
    done.wait(120)
    for s in socks:
        s.close()


def _steady_client(port, stop, out):
    """Keeps sending one GET of the celebrity every 2 ms (its flow stays among the most
    recently active) until `stop`; reports how many it sent, or its error."""
    sent = 0
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        request = resp("GET", CELEBRITY)
        while not stop.is_set():
            s.sendall(request)
            sent += 1
            reply = b""
            while not reply.endswith(b"hello\r\n"):
                chunk = s.recv(100)
                if not chunk:
                    raise OSError("connection closed")
                reply += chunk
            time.sleep(0.002)  # paced: one GET every 2 ms, as the docstring says
        s.close()
        out.put((sent, None))
    except OSError as e:
        out.put((sent, f"the steady client failed after {sent} GETs: {e!r}"))


def flood_plan():
    # With CAP_SYS_RESOURCE the hard limit may rise (inherited by the servers and the
    # workers); without it, it stays and more processes share the flows.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 20000:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, 20000))
        except (ValueError, OSError):
            pass
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    per = min(17000, hard - 200)  # per process, client and server side alike
    servers = min(12, -(-FLOOD_FLOWS // per))
    return servers, per, min(FLOOD_FLOWS, servers * per)


def case_hostile(work):
    """garbage, bulk, array and split against one hotkeyd, each asserted on its own."""
    r = RedisServer(work)
    r.client().set(CELEBRITY, b"hello")
    d, good = hostile_daemon(work, r)
    g = Guard(d, good)
    figures = {"case": "hostile"}
    failed = []
    for name, fn in (("garbage", garbage), ("bulk", bulk), ("array", array), ("split", split)):
        log(f"-- {name}")
        try:
            figures[name] = fn(r, g)
        except AssertionError as e:
            failed.append(f"{name}: {e}")
            log(f"  FAIL: {name}: {e}")
            g.base, g.good_base = d.settled(), good.sent
    print(json.dumps(figures))
    if failed:
        raise AssertionError("; ".join(failed))


def case_flood(work):
    servers, per, flows = flood_plan()
    config = ["--maxclients", str(per + 100), "--tcp-backlog", "4096"]
    r = RedisServer(work, *config)
    r.client().set(CELEBRITY, b"hello")
    # More servers hold more connections (each process has its file limit); one tap sees
    # them all when they share its port, each on its own loopback address.
    flood_servers = [RedisServer(work, *config, name=f"flood{i}", host=f"127.0.0.{2 + i}",
                                 port=r.port) for i in range(servers - 1)]
    d, good = hostile_daemon(work, r, *FLOOD_FLAGS)
    good.batch = 1
    g = Guard(d, good)
    print(json.dumps({"case": "flood", **flood(d, g, r, flood_servers, servers, per, flows)}))


def flood(d, g, r, flood_servers, servers, per, flows):
    ctx = multiprocessing.get_context("fork")
    targets = [(s.host, s.port) for s in [r] + flood_servers]
    done, ready, stop, out = ctx.Event(), ctx.Queue(), ctx.Event(), ctx.Queue()
    steady = ctx.Process(target=_steady_client, args=(r.port, stop, out))
    steady.start()
    workers = []
    opened = failed = 0
    try:
        wait_until(lambda: d.counts().read_keys > g.base.read_keys, 10, "the steady client")
        t0 = time.monotonic()
        left = flows
        for i, (host, port) in enumerate(targets):
            n = min(per - (10 if i == 0 else 0), left)
            left -= n
            w = ctx.Process(target=_flood_worker, args=(host, port, 10 + i, n, ready, done))
            w.start()
            workers.append(w)
        for _ in workers:
            while True:
                try:
                    o, f = ready.get(timeout=0.2)
                    break
                except Exception:  # noqa: BLE001 (queue.Empty: sample RSS meanwhile)
                    g.sample_rss()
            opened, failed = opened + o, failed + f
        elapsed = time.monotonic() - t0
        # Every connection is open now: the tap has seen each handshake once it counts them.
        # Every connection is open: the tap has seen the handshakes once its count of
        # opened flows stops moving (the steady client's GETs keep the rest moving).
        settle(lambda: d.counts().flows_opened, timeout=60, quiet=0.5)
        mid = d.counts()
        g.sample_rss()
        log(f"  {opened} connections held ({failed} failed) over {len(targets)} servers in "
            f"{elapsed:.1f} s; tap: {mid.flows:.0f} flows tracked, "
            f"{mid.flows_evicted - g.base.flows_evicted:.0f} evicted, "
            f"{mid.flows_opened - g.base.flows_opened:.0f} opened, {mid.drops():.0f} dropped")
        check(mid.flows <= MAX_FLOWS, f"{mid.flows:.0f} flows tracked <= --tap.max-flows={MAX_FLOWS}")
    finally:
        stop.set()
        steady.join(30)
        if steady.is_alive():
            steady.kill()
        done.set()
        for w in workers:
            w.join(30)
            if w.is_alive():
                w.kill()
    sent, error = out.get(timeout=10)
    check(error is None, error or "the steady client ran through the flood")
    g.good.sent += sent  # the steady client's GETs are good traffic too
    if opened < FLOOD_FLOWS:
        log(f"  note: {opened} concurrent flows, not {FLOOD_FLOWS}: RLIMIT_NOFILE's hard limit "
            f"and {servers} servers allow {flows}")
    check(opened >= 20 * MAX_FLOWS, f"{opened} concurrent flows (>= 20 x --tap.max-flows)")
    delta = g.end("flood")
    seen = opened if not delta.drops() else opened // 2
    check(delta.flows_evicted >= seen - MAX_FLOWS,
          f"{delta.flows_evicted:.0f} flows evicted (>= {seen} - {MAX_FLOWS}"
          + (", half the flows: packets were dropped)" if delta.drops() else ")"))
    return {"flows": opened, "failed_connects": failed, "servers": len(targets),
            "connect_seconds": round(elapsed, 2), "evicted": delta.flows_evicted,
            "steady_gets": sent, "rss_start_bytes": g.rss0, "rss_peak_bytes": g.rss_peak,
            "bound_bytes": BOUND}


CASES = [("midstream", case_midstream), ("hostile", case_hostile), ("flood", case_flood)]

if __name__ == "__main__":
    require_capture("tap_hostile_e2e")
    require_programs("redis-server")
    if not hotkeyd_has_tap(HOTKEYD):
        sys.exit(f"FAIL: {HOTKEYD} has no --tap.interface flag (built without the tap?)")
    run_cases("tap-hostile", CASES, sys.argv[2:])
