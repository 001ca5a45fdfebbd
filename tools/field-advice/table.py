#!/usr/bin/env python3
"""The advice over real redis-servers at several loads and mixes, with the shipped defaults.

One cell is one redis-server under a CPU quota and one hotkeyd beside it
(`--tap.interface=lo --tap.port=P`, nothing else set). A load generator sends GETs over
10,000 background keys; at onset `user:42` takes --share of the commands, with the cell's
write fraction. The quota is set from the shard's CPU time under the same number of
commands, so that it runs at the cell's busy fraction:

  warm      background only, no quota, for 15 s: the CPU the commands cost (c CPUs)
  settle    the quota c / busy (none for a busy at or under c; 0.7 c for `saturated`), 10 s
  onset     user:42 hot; /api/v1/top polled every 250 ms for 60 s: seconds from onset to
            the first advice, the advice values seen (runs collapsed), and the advice and
            projected loads at the end
  applied   the advised fix applied by hand in the load generator, as the model counts it
            (cache: user:42's reads stay off the shard but for the kits' refreshes;
            replicate: 1/replicas of its reads; split: 1/S of its writes; split_cache:
            both), for 20 s: the shard's busy fraction from its own INFO, against the
            advice's projection for that fix

A cell whose busy fraction is at or under what the commands cost without a quota runs with
fewer commands (--ops scaled down) and no quota. Needs root (the tap, the cgroup),
redis-server and the cgroup cpu controller; exits 77 without them. Prints one JSON object a
cell on stdout as it goes, then a Markdown table.

usage: table.py HOTKEYD [--busy 0.03,0.3,0.6,0.9,saturated] [--writes 0.05,0.5,0.95]
                        [--pipeline 50,1] [--ops 10000] [--share 0.3] [--parallel 1]
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import SKIP, CpuQuota, Load, Skip, free_port, get_json, resp  # noqa: E402

ONSET_SECONDS = 60


class Poller(threading.Thread):
    """Polls /api/v1/top every 250 ms: user:42's advice and projected loads, the busy."""

    def __init__(self, web):
        super().__init__(daemon=True)
        self.web = web
        self.samples = []
        self.model = {}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                top = get_json(self.web + "/api/v1/top")
                key = next((k for k in top["keys"] if k["key"] == "user:42"), None) or {}
                self.model = top.get("model", {})
                self.samples.append({
                    "t": t,
                    "advice": key.get("advice"),
                    "projected": key.get("projected_load", {}),
                    "busy": self.model.get("shard", {}).get("busy"),
                })
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.25)


def shard_cpu(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(resp("INFO", "cpu"))
        time.sleep(0.2)
        text = s.recv(1 << 16).decode()
    f = dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)
    return float(f["used_cpu_sys"]) + float(f["used_cpu_user"])


def cpu_rate(port, seconds):
    c0, t0 = shard_cpu(port), time.monotonic()
    time.sleep(seconds)
    return (shard_cpu(port) - c0) / (time.monotonic() - t0)


def keep_fractions(fix, model, reads_per_second):
    """What of user:42's (reads, writes) still reach the shard under `fix`, as the model
    counts it (daemon/common/model/shard_model.cc)."""
    refresh = model.get("refresh") or 1
    app_servers = (model.get("app_servers") or {}).get("value") or 1
    refresh_keep = min(1.0, app_servers / refresh / max(reads_per_second, 1e-9))
    split = model.get("split") or 1
    replicas = model.get("replicas") or 1
    return {
        "cache": (refresh_keep, 1.0),
        "replicate": (1.0 / replicas, 1.0),
        "split": (1.0, 1.0 / split),
        "split_cache": (refresh_keep, 1.0 / split),
    }.get(fix, (1.0, 1.0))


def run_cell(hotkeyd, redis_server, busy, writes, pipeline, ops, share):
    label = busy if isinstance(busy, str) else f"{busy:.0%}"
    cell = {"busy": label, "writes": writes, "pipeline": pipeline}
    tmp = tempfile.mkdtemp(prefix="field-table-")
    procs, quota, load, poller = [], None, None, None
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
        quota = CpuQuota(f"field-table-{os.getpid()}-{port}")
        quota.add(procs[0].pid)
        web = f"http://127.0.0.1:{web_port}"
        log = open(os.path.join(tmp, "hotkeyd.log"), "w")
        procs.append(subprocess.Popen(
            [hotkeyd, "--tap.interface=lo", f"--tap.port={port}",
             f"--web.listen-address=127.0.0.1:{web_port}", "--udp.listen-address="],
            stdout=log, stderr=subprocess.STDOUT))
        for _ in range(100):
            try:
                get_json(web + "/api/v1/top")
                break
            except OSError:
                time.sleep(0.1)
        load = Load(port, ops, pipeline)
        load.start()
        time.sleep(5)
        c = cpu_rate(port, 10)
        if busy == "saturated":
            cpus = 0.7 * c
        elif busy > c:
            cpus = c / busy
        else:
            # Under what the commands cost on a whole CPU: fewer commands, no quota.
            load.ops = max(200.0, ops * busy / c)
            cpus = None
        cell["ops"] = round(load.ops)
        cell["quota_cpus"] = None if cpus is None else round(cpus, 4)
        quota.set(cpus)
        time.sleep(10)
        poller = Poller(web)
        poller.start()
        onset = time.monotonic()
        load.share, load.writes = share, writes
        time.sleep(ONSET_SECONDS)
        samples = [s for s in poller.samples if s["t"] >= onset]
        first = next((s for s in samples if s["advice"] is not None), None)
        seen = []
        for s in samples:
            if s["advice"] is not None and (not seen or seen[-1] != s["advice"]):
                seen.append(s["advice"])
        last = next((s for s in reversed(samples) if s["advice"] is not None), None)
        cell["seconds_to_advice"] = None if first is None else round(first["t"] - onset, 1)
        cell["advice_seen"] = seen
        cell["advice"] = None if last is None else last["advice"]
        cell["projected"] = {} if last is None else {
            k: round(v, 3) for k, v in last["projected"].items() if v is not None}
        cell["busy_before"] = None if last is None or last["busy"] is None else round(
            last["busy"], 3)
        fix = cell["advice"]
        if fix not in (None, "none", "isolate"):
            reads_per_second = load.ops * share * (1 - writes)
            load.keep_reads, load.keep_writes = keep_fractions(fix, poller.model,
                                                               reads_per_second)
            time.sleep(3)
            used = cpu_rate(port, 15)
            cell["busy_applied"] = round(used / (cpus if cpus and cpus < 1 else 1.0), 3)
        return cell
    except (OSError, Skip) as e:
        cell["error"] = str(e)
        return cell
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


def markdown(cells):
    rows = ["| busy | writes | pipeline | advice | seconds to advice | fixes seen in 60 s "
            "| busy measured | projected with no fix | projected with the fix | measured with "
            "the fix |", "|---|---:|---:|---|---:|---|---:|---:|---:|---:|"]
    for c in cells:
        proj = c.get("projected", {})
        fix = c.get("advice")
        rows.append("| {} | {:.0%} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            c["busy"], c["writes"], c["pipeline"], fix, c.get("seconds_to_advice"),
            " → ".join(c.get("advice_seen", [])) or "-", c.get("busy_before"),
            proj.get("none"), proj.get(fix) if fix not in (None, "none") else "-",
            c.get("busy_applied", "-")))
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hotkeyd")
    ap.add_argument("--busy", default="0.03,0.3,0.6,0.9,saturated")
    ap.add_argument("--writes", default="0.05,0.5,0.95")
    ap.add_argument("--pipeline", default="50,1")
    ap.add_argument("--ops", type=float, default=10000)
    ap.add_argument("--share", type=float, default=0.3)
    ap.add_argument("--parallel", type=int, default=1,
                    help="cells at once (each has its own redis-server, quota and hotkeyd)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (the tap, the cgroup)", file=sys.stderr)
        return SKIP
    redis_server = shutil.which("redis-server")
    if not redis_server:
        print("needs redis-server", file=sys.stderr)
        return SKIP
    busies = [b if b == "saturated" else float(b) for b in a.busy.split(",")]
    grid = [(b, float(w), int(p)) for p in a.pipeline.split(",") for w in a.writes.split(",")
            for b in busies]

    def one(args):
        b, w, p = args
        # Without pipelining one connection sends fewer commands a second.
        cell = run_cell(a.hotkeyd, redis_server, b, w, p, a.ops if p > 1 else a.ops / 4,
                        a.share)
        print(json.dumps(cell), flush=True)
        return cell

    with ThreadPoolExecutor(max_workers=a.parallel) as pool:
        cells = list(pool.map(one, grid))
    print(markdown(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
