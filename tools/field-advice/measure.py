#!/usr/bin/env python3
"""Issue 33's advice in the field: one real redis-server, hotkeyd beside it with the shipped
defaults (a tap on loopback, nothing else set), and the figures users read.

A load generator sends pipelined commands at a fixed rate: background GETs over 10,000 keys
and, once the key turns hot, `user:42` at --share of them (--writes of those SETs). The
phases, each timed on this host's monotonic clock:

  warm      background only, no CPU quota (the rate window fills)
  headroom  user:42 hot on a shard with headroom (a few % busy): its advice must be `none`,
            never a fix (the issue: `isolate` on a made-up 10,000 ops/s capacity)
  quota     a CPU quota under the shard's demand (cgroup v1 cpu or v2 cpu.max): it saturates;
            seconds from the quota to the first fix ("change to fix"), and the fixes seen
            while it stays (one, if the advice is steady)
  cool      user:42 back to background (its episode ends)
  onset     user:42 hot again under the quota: seconds from onset to the first fix
  lift      the quota lifted: seconds until the advice is `none` again

hotkeyd's /api/v1/top is polled every 250 ms; its log lines "advised fix changed" and
"the shard's CPUs changed" are printed. Needs root (the tap, the cgroup), redis-server and
the cgroup cpu controller; exits 77 without them. Prints one JSON object on stdout.

usage: measure.py HOTKEYD [--ops 10000] [--share 0.3] [--writes 0.05] [--pipeline 50]
"""

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SKIP = 77


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(msg):
    print(f"[{time.monotonic() - T0:7.2f}] {msg}", file=sys.stderr, flush=True)


T0 = time.monotonic()


# The cluster lab's cgroup with a CPU quota (tools/cluster-lab/lab.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cluster-lab"))
from lab import CpuQuota, Skip  # noqa: E402


def resp(*args):
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def read_replies(sock, buf, n):
    """Reads n simple, error, integer or bulk replies; returns the bytes left over."""
    got = 0
    while True:
        i = 0
        while got < n:
            end = buf.find(b"\r\n", i)
            if end < 0:
                break
            kind = buf[i:i + 1]
            if kind == b"$":
                size = int(buf[i + 1:end])
                if size < 0:
                    i = end + 2
                elif len(buf) >= end + 2 + size + 2:
                    i = end + 2 + size + 2
                else:
                    break
            else:
                i = end + 2
            got += 1
        buf = buf[i:]
        if got == n:
            return buf
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("redis closed the connection")
        buf += chunk


class Load(threading.Thread):
    """Pipelined commands at `ops` per second (fewer when the shard cannot keep up)."""

    def __init__(self, port, ops, pipeline):
        super().__init__(daemon=True)
        self.port, self.ops, self.pipeline = port, ops, pipeline
        self.share, self.writes = 0.0, 0.0
        # The fraction of user:42's reads and writes that still reach this shard: a fix
        # applied by hand (a cache keeps almost no reads, a split 1/S of the writes).
        self.keep_reads, self.keep_writes = 1.0, 1.0
        self.sent = 0
        self.stop = threading.Event()

    def run(self):
        sock = socket.create_connection(("127.0.0.1", self.port))
        rnd = random.Random(42)
        buf = b""
        gets = [resp("GET", f"bg:{i}") for i in range(10000)]
        hot_get, hot_set = resp("GET", "user:42"), resp("SET", "user:42", "x" * 64)
        next_t = time.monotonic()
        interval = self.pipeline / self.ops
        while not self.stop.is_set():
            share, writes = self.share, self.writes
            keep_reads, keep_writes = self.keep_reads, self.keep_writes
            cmds = []
            for _ in range(self.pipeline):
                if rnd.random() < share:
                    write = rnd.random() < writes
                    if rnd.random() < (keep_writes if write else keep_reads):
                        cmds.append(hot_set if write else hot_get)
                else:
                    cmds.append(gets[rnd.randrange(10000)])
            if cmds:
                sock.sendall(b"".join(cmds))
                buf = read_replies(sock, buf, len(cmds))
            self.sent += len(cmds)
            next_t += interval
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -1:
                next_t = time.monotonic()  # behind (a saturated shard): no catch-up burst
        sock.close()


def get_json(url):
    with urllib.request.urlopen(url, timeout=2) as r:
        return json.load(r)


class Poller(threading.Thread):
    """Polls /api/v1/top every 250 ms: (t, hot, advice, busy, capacity origin)."""

    def __init__(self, web):
        super().__init__(daemon=True)
        self.web = web
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                top = get_json(self.web + "/api/v1/top")
                key = next((k for k in top["keys"] if k["key"] == "user:42"), None)
                model = top.get("model", {})
                self.samples.append({
                    "t": t,
                    "hot": bool(key and key["hot"]),
                    "advice": key["advice"] if key else None,
                    "none_load": (key or {}).get("projected_load", {}).get("none"),
                    "busy": model.get("shard", {}).get("busy"),
                    "capacity": model.get("capacity", {}),
                })
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.25)

    def between(self, a, b):
        return [s for s in self.samples if a <= s["t"] < b]


def first_time(samples, pred, since):
    for s in samples:
        if s["t"] >= since and pred(s):
            return round(s["t"] - since, 2)
    return None


def fixes_seen(samples):
    """The advice values in order, runs collapsed, pending (null) left out."""
    seen = []
    for s in samples:
        a = s["advice"]
        if a is not None and (not seen or seen[-1] != a):
            seen.append(a)
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hotkeyd")
    ap.add_argument("--ops", type=float, default=10000)
    ap.add_argument("--share", type=float, default=0.3)
    ap.add_argument("--writes", type=float, default=0.05)
    ap.add_argument("--pipeline", type=int, default=50)
    ap.add_argument("--quota-fraction", type=float, default=0.8,
                    help="the quota as a fraction of the CPU the shard used with headroom")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (the tap, the cgroup)", file=sys.stderr)
        return SKIP
    redis_server = shutil.which("redis-server")
    if not redis_server:
        print("needs redis-server", file=sys.stderr)
        return SKIP
    tmp = tempfile.mkdtemp(prefix="field-advice-")
    procs, quota, load, poller = [], None, None, None
    result = {"ops": a.ops, "share": a.share, "writes": a.writes, "pipeline": a.pipeline}
    try:
        port, web_port = free_port(), free_port()
        procs.append(subprocess.Popen(
            [redis_server, "--port", str(port), "--save", "", "--appendonly", "no",
             "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.05)
        try:
            quota = CpuQuota(f"field-advice-{os.getpid()}")
            quota.add(procs[0].pid)
        except (OSError, Skip) as e:
            print(f"no CPU quota possible: {e}", file=sys.stderr)
            return SKIP
        hk_log = open(os.path.join(tmp, "hotkeyd.log"), "w")
        web = f"http://127.0.0.1:{web_port}"
        procs.append(subprocess.Popen(
            [a.hotkeyd, "--tap.interface=lo", f"--tap.port={port}",
             f"--web.listen-address=127.0.0.1:{web_port}", "--udp.listen-address="],
            stdout=hk_log, stderr=subprocess.STDOUT))
        for _ in range(100):
            try:
                get_json(web + "/api/v1/top")
                break
            except OSError:
                time.sleep(0.1)
        load = Load(port, a.ops, a.pipeline)
        load.start()
        poller = Poller(web)
        poller.start()

        def cpu():
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(resp("INFO", "cpu"))
                time.sleep(0.2)
                text = s.recv(1 << 16).decode()
            f = dict(l.split(":", 1) for l in text.split("\r\n") if ":" in l)
            return float(f["used_cpu_sys"]) + float(f["used_cpu_user"])

        phases = {}

        def phase(name, seconds):
            phases[name] = time.monotonic()
            log(f"phase {name} ({seconds} s)")
            time.sleep(seconds)

        phase("warm", 15)
        load.share, load.writes = a.share, a.writes
        c0, t0 = cpu(), time.monotonic()
        phase("headroom", 30)
        cpu_used = (cpu() - c0) / (time.monotonic() - t0)
        cpus = cpu_used * a.quota_fraction
        log(f"the shard used {cpu_used:.4f} CPUs; quota {cpus:.4f} CPUs")
        quota.set(cpus)
        phase("quota", 40)
        load.share = 0.0
        phase("cool", 25)
        load.share = a.share
        phase("onset", 30)
        quota.set(None)
        phase("lift", 25)
        end = time.monotonic()
        poller.stop.set()
        s = poller.samples
        head = poller.between(phases["headroom"], phases["quota"])
        result["headroom"] = {
            "cpus_used": round(cpu_used, 4),
            "busy": [x["busy"] for x in head if x["busy"] is not None][-1:],
            "capacity": head[-1]["capacity"] if head else None,
            "advice_seen": fixes_seen(head),
            "seconds_to_first_advice": first_time(s, lambda x: x["advice"] is not None,
                                                  phases["headroom"]),
        }
        quota_samples = poller.between(phases["quota"], phases["cool"])
        result["quota"] = {
            "cpus": round(cpus, 4),
            "seconds_to_fix": first_time(s, lambda x: x["advice"] not in (None, "none"),
                                         phases["quota"]),
            "advice_seen": fixes_seen(quota_samples),
            "busy_last": [x["busy"] for x in quota_samples if x["busy"] is not None][-1:],
            "none_load_last": [x["none_load"] for x in quota_samples
                               if x["none_load"] is not None][-1:],
        }
        onset = poller.between(phases["onset"], phases["lift"])
        result["onset"] = {
            "seconds_to_hot": first_time(s, lambda x: x["hot"], phases["onset"]),
            "seconds_to_fix": first_time(s, lambda x: x["advice"] not in (None, "none"),
                                         phases["onset"]),
            "advice_seen": fixes_seen(onset),
        }
        lift = poller.between(phases["lift"], end)
        result["lift"] = {
            "seconds_to_none": first_time(s, lambda x: x["advice"] == "none", phases["lift"]),
            "advice_seen": fixes_seen(lift),
        }
        result["load_ops_sent"] = load.sent
        hk_log.flush()
        with open(os.path.join(tmp, "hotkeyd.log")) as f:
            lines = [l.rstrip() for l in f if any(
                m in l for m in ("advised fix changed", "CPUs changed", "advice inputs",
                                 "episode", "the shard answers"))]
        result["log"] = lines
        print(json.dumps(result, indent=1))
        return 0
    finally:
        if load:
            load.stop.set()
        if poller:
            poller.stop.set()
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        if quota:
            quota.remove()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
