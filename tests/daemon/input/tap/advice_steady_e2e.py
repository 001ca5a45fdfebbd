#!/usr/bin/env python3
"""advice_steady_e2e.py: one steady answer beside a real, really loaded Redis, with no
--cluster.* flags.

Usage: advice_steady_e2e.py HOTKEYD_BIN

A real redis-server on loopback is put under a cgroup CPU quota sized (from a calibration
run, then from a run under the quota) so that the test's load keeps its main thread about
95% busy: the cost of an op drifts by a tenth over a minute on a shared host (0.83 to 1.05
of the quota in one run of 24 answers), and a load set at 90% drifted to 0.74 for a window,
where none fits with room. A real hotkeyd taps its
port with no --cluster.* flag: it asks the Redis for its load and measures the capacity.
The load is 10,000 ops/s on average but bursty within the rate window (1 s at 15,000 ops/s,
then 1 s at 5,000), 30% of it on one key (about 5% of that key's ops writes). Over 60 s of
/api/v1/top polls (four a second), from 20 s after the key is first advised, the test
asserts:
  - one advised strategy for the key;
  - at the polls where the load was steady over the rate window (the driver's own count
    over the last 10 s within 5% of 10,000 ops/s), the projected busiest-shard load with no
    fix within 20% of its median there (10% on a quiet machine; the 10% bound is pinned on a
    fake clock by aggregator_test.cc); a driver held up by a loaded machine is not a
    steady load, and if it kept one at under half the polls the test is skipped (77),
    saying so;
  - its share within 0.03 of the truth (0.30);
  - the capacity measured (model.capacity.origin), not configured.
It prints the figures (strategies seen, projected load min/median/max, share min/max, the
capacity hotkeyd measured against the one Redis's own INFO implies over the same minute).

Needs root (the capture and the cgroup); exits 77 (skipped) with the reason when no cgroup
with the cpu controller can be made. Everything it starts is stopped on exit.
"""

import collections
import os
import statistics
import sys
import socket
import threading
import time

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "lib"))
sys.path.insert(0, here)
import cpu_quota  # noqa: E402
import hotkeyd_e2e as e2e  # noqa: E402
import tap_e2e_lib as lib  # noqa: E402

HOT = "item:flash:stock"
POLL_SECONDS = 60
TARGET_BUSY = 0.95
# Enough ops that the quota's period stays short (1 ms of CPU every 150 ms or so): the
# kernel throttles an overrun of the quota for whole periods, and at 2,000 ops/s (1 ms every
# 285 ms) the shard once left INFO unanswered for 2 s.
AVG_OPS = 10000


def main_thread_cpu(client):
    info = client.info("cpu")
    return float(info["used_cpu_sys_main_thread"]) + float(info["used_cpu_user_main_thread"])


def resp(*args):
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        out.append(f"${len(a)}\r\n{a}\r\n".encode())
    return b"".join(out)


class Driver:
    """AVG_OPS ops/s on average in 50 ms pipelines, on a raw socket: 1.5 x AVG_OPS in even
    seconds, 0.5 x in odd ones; 30% on HOT (1 in 21 of those a SET), the rest GETs over
    10,000 other keys (never set). Pre-encoded commands and a count of the replies' lines keep
    the driver's own CPU small beside a loaded host's."""

    def __init__(self, redis):
        self.sock = socket.create_connection((redis.host, redis.port))
        self.sock.sendall(resp("SET", HOT, "v"))  # so that every GET of HOT has its value
        if self.sock.recv(16) != b"+OK\r\n":
            raise AssertionError("SET before the load: no +OK")
        self.stop = threading.Event()
        self.sent = 0
        self.history = collections.deque(maxlen=2000)  # (time, sent), one per pipeline
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        # Each command with the CRLFs of its reply: "$-1" (never-set key) and "+OK" one,
        # "$1\r\nv" two.
        hot_get, hot_set = (resp("GET", HOT), 2), (resp("SET", HOT, "v"), 1)
        bg = [(resp("GET", f"bg:{(i * 7919) % 10000}"), 1) for i in range(10000)]
        t0 = time.monotonic()
        slot = 0
        i = 0
        while not self.stop.is_set():
            n = (AVG_OPS * 3 // 2 if (slot // 20) % 2 == 0 else AVG_OPS // 2) // 20
            cmds = []
            for _ in range(n):
                i += 1
                if i % 10 < 3:
                    cmds.append(hot_set if i % 10 == 0 and (i // 10) % 7 == 0 else hot_get)
                else:
                    cmds.append(bg[i % 10000])
            self.sock.sendall(b"".join(c for c, _ in cmds))
            want, got, last = sum(lines for _, lines in cmds), 0, b""
            while got < want:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    return
                got += (last + chunk).count(b"\r\n")  # one byte kept: a CRLF split in two
                last = chunk[-1:] if chunk.endswith(b"\r") else b""
            self.sent += n
            self.history.append((time.monotonic(), self.sent))
            slot += 1
            delay = t0 + slot * 0.05 - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    def rate(self, seconds=10):
        """Ops/s the driver sent over the last `seconds`, or None before it has run so long."""
        history = list(self.history)
        if not history or history[-1][0] - history[0][0] < seconds:
            return None
        t1, n1 = history[-1]
        for t0, n0 in history:
            if t0 >= t1 - seconds:
                return (n1 - n0) / (t1 - t0)
        return None

    def close(self):
        self.stop.set()
        self.thread.join(10)
        self.sock.close()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lib.require_capture("advice_steady_e2e")
    lib.require_programs("redis-server")
    work = e2e.Workdir("advice-steady")
    ok = False
    quota = None
    driver = None
    try:
        redis = lib.RedisServer(work)
        client = redis.client()
        # Calibration: the main thread's CPU at this load, unconstrained.
        driver = Driver(redis)
        time.sleep(1)
        c0, t0 = main_thread_cpu(client), time.monotonic()
        time.sleep(4)
        c1, t1 = main_thread_cpu(client), time.monotonic()
        driver.close()
        used = (c1 - c0) / (t1 - t0)
        try:
            quota = cpu_quota.CpuQuota("hotkeyd-advice-steady", used / TARGET_BUSY)
        except cpu_quota.Unavailable as e:
            print(f"SKIP: {e}")
            sys.exit(77)
        quota.add(redis.proc.pid)
        e2e.log(f"calibration: {used * 100:.2f}% of a core at {AVG_OPS:,} ops/s; quota "
                f"{quota.cpus:.4f} CPUs")
        # The cost of an op differs under the quota (it falls as the quota tightens, and
        # moves with what shares the CPU): read the busy fraction under it, and set the quota
        # again until the load is near TARGET_BUSY, clearly over the advice's target (0.8).
        driver = Driver(redis)
        time.sleep(1)
        for _ in range(3):
            c0, t0 = main_thread_cpu(client), time.monotonic()
            time.sleep(5)
            c1, t1 = main_thread_cpu(client), time.monotonic()
            busy = (c1 - c0) / (t1 - t0) / quota.cpus
            e2e.log(f"under {quota.cpus:.4f} CPUs: {busy:.3f} busy")
            if abs(busy - TARGET_BUSY) <= 0.03 or busy >= 0.99:  # there, or saturated
                break
            quota.set(quota.cpus * busy / TARGET_BUSY)
        driver.close()
        cpus = quota.cpus

        d = e2e.Hotkeyd(sys.argv[1], "--tap.interface=lo", f"--tap.port={redis.port}",
                        "--udp.listen-address=", work=work)
        driver = Driver(redis)

        def advised():
            keys = {k["key"]: k for k in d.top()["keys"]}
            k = keys.get(HOT)
            return k if k and k["advice"] else None
        e2e.wait_until(advised, 60, f"{HOT} advised", interval=0.25)
        time.sleep(20)  # a steady load: the capacity's sums take in a few more answers

        strategies, nones, shares, capacities, steady = [], [], [], [], []
        r0, cpu0, w0 = client.info("stats")["total_commands_processed"], main_thread_cpu(client), \
            time.monotonic()
        end = time.monotonic() + POLL_SECONDS
        top = None
        while time.monotonic() < end:
            top = d.top()
            k = {k["key"]: k for k in top["keys"]}.get(HOT)
            if not (k and k["advice"]):
                raise AssertionError(f"{HOT} not exported and advised at a poll: {k}")
            strategies.append(k["advice"])
            nones.append(k["projected_load"]["none"])
            shares.append(k["share"])
            capacities.append(top["model"]["capacity"]["value"])
            rate = driver.rate()
            steady.append(rate is not None and abs(rate - AVG_OPS) <= 0.05 * AVG_OPS)
            time.sleep(0.25)
        r1, cpu1, w1 = client.info("stats")["total_commands_processed"], main_thread_cpu(client), \
            time.monotonic()
        driver.close()
        driver = None

        busy = (cpu1 - cpu0) / (w1 - w0) / cpus
        info_capacity = (r1 - r0) / (w1 - w0) / busy
        steady_nones = [x for x, ok in zip(nones, steady) if ok]
        e2e.log(f"the driver kept {AVG_OPS:,} ops/s (within 5%) over the rate window at "
                f"{len(steady_nones)} of {len(nones)} polls")
        if len(steady_nones) < len(nones) / 2:
            print(f"SKIP: the driver could not keep a steady load on this machine "
                  f"({len(steady_nones)} of {len(nones)} polls)")
            ok = True  # nothing failed; the Workdir is cleaned up
            sys.exit(77)
        median = statistics.median(steady_nones)
        e2e.log(f"{len(strategies)} polls over {POLL_SECONDS} s: strategies "
                f"{ {s: strategies.count(s) for s in set(strategies)} }")
        e2e.log(f"projected load with no fix at the steady polls: min {min(steady_nones):.3f} "
                f"median {median:.3f} max {max(steady_nones):.3f} (all polls: "
                f"{min(nones):.3f} to {max(nones):.3f})")
        e2e.log(f"share: min {min(shares):.4f} max {max(shares):.4f} (truth 0.30)")
        e2e.log(f"capacity: hotkeyd {statistics.median(capacities):.0f} ops/s "
                f"[{min(capacities):.0f}, {max(capacities):.0f}] "
                f"({top['model']['capacity']['origin']}); Redis INFO over the same minute: "
                f"{(r1 - r0) / (w1 - w0):.0f} commands/s at {busy:.3f} of {cpus:.4f} CPUs = "
                f"{info_capacity:.0f} commands/s")
        e2e.log(f"shard as hotkeyd reports it: {top['model']['shard']}")
        e2e.check(len(set(strategies)) == 1, f"one strategy over {POLL_SECONDS} s")
        # On a quiet machine they stay within 10% of their median (0.857 to 0.956 around
        # 0.922 in one run); a loaded CI host's scheduling moves the tap's and the driver's
        # windows apart by more (0.796 to 0.975 around 0.922 in one run). The 10% bound on a
        # bursty load is pinned deterministically by aggregator_test.cc on a fake clock.
        within = 0.2
        e2e.check(all(abs(x - median) <= within * median for x in steady_nones),
                  f"projected loads within {within:.0%} of their median at a steady load")
        e2e.check(all(abs(s - 0.30) <= 0.03 for s in shares), "share within 0.03 of 0.30")
        e2e.check(top["model"]["capacity"]["origin"] == "measured", "capacity measured")
        ok = True
        print("PASS")
    except AssertionError as e:
        print(f"FAIL: {e}\n{work.log_tails()}")
    finally:
        if driver:
            driver.close()
        e2e.Procs.stop_all()
        if quota:
            quota.close()
        work.finish(ok)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
