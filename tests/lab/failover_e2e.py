#!/usr/bin/python3
"""failover_e2e.py: a failover under load with the Python kit applying a fix (issue 33, part 4).

Usage: failover_e2e.py HOTKEYD_BIN [--report-from-test] [--after 90]

On loopback it starts a Redis Cluster of 3 primaries with a replica each (`redis-cli
--cluster create ... --cluster-replicas 1`) and the layout docs/operations.md ships: a
tapping hotkeyd beside every node, replicas included (--tap.interface=lo, --shard.address of
its node, nothing else set: the shipped defaults). The hot key's primary and its replica
each run under a CPU quota sized so that the primary is about 90% busy with no fix (set from
the CPU the load used, then again from the busy fraction read under it, until a fix comes).
One driver thread sends pipelined background GETs to the primary's slots through a
redis.RedisCluster; app threads read `user:42` (5% INCRs) through the kit (HotkeyClient
around a redis.RedisCluster, following all six feeds).

  onset     the key is hot on its primary; the feed pushes a fix, the kit applies it
  failover  CLUSTER FAILOVER on the replica: it is promoted, the old primary turns replica;
            the clients follow MOVED. Each hotkeyd must say its node's new role
            (hotkey_shard_role_info, the "role changed" log line); the fix must stay in
            force at the kit, with no gap of more than 10 s, for --after seconds (past
            feed.hold, 60 s: the old primary's feed keeps the entry while the kit reports
            the demand it absorbs)

The kit reports its demand itself once clients/python sends it; --report-from-test sends
the reports from the test (the kit's cache hits, once a second, to every feed that names the
key). Prints the timeline and the longest gap as JSON. Exits 77 without root, redis-server,
redis-cli, the cgroup cpu controller or python3-redis.
"""

import argparse
import base64
import json
import logging
import os
import random
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "cluster-lab"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
import hotkeyd_e2e as e2e  # noqa: E402

SKIP = 77
HOT = "user:42"
MAX_GAP = 10.0


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key) % 16384


class Node:
    def __init__(self, work, i):
        import redis  # noqa: F401: needed by the kit and the nodes
        self.i = i
        self.port = e2e.free_port()
        self.address = f"127.0.0.1:{self.port}"
        d = work.file(f"redis{i}")
        os.mkdir(d)
        self.proc = e2e.Procs.start(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", d, "--protected-mode", "no", "--loglevel", "warning",
             "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
             "--cluster-port", str(e2e.free_port())],
            work.file(f"redis{i}.log"))
        self.client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10)
        e2e.wait_until(self._ready, 10, f"redis-server {i}")
        self.id = self.client.execute_command("CLUSTER", "MYID").decode()
        self.hotkeyd = None

    def _ready(self):
        try:
            return self.client.ping()
        except Exception:  # noqa: BLE001
            return False

    def cpu(self):
        info = self.client.info("cpu")
        return float(info["used_cpu_sys_main_thread"]) + float(info["used_cpu_user_main_thread"])

    def role(self):
        return self.client.info("replication")["role"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hotkeyd")
    ap.add_argument("--report-from-test", action="store_true")
    ap.add_argument("--after", type=float, default=90.0,
                    help="seconds to watch the fix after the failover")
    ap.add_argument("--bg-ops", type=float, default=4000)
    ap.add_argument("--hot-ops", type=float, default=1500)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (the taps, the cgroups)")
        return SKIP
    for tool in ("redis-server", "redis-cli"):
        if not any(os.access(os.path.join(p, tool), os.X_OK)
                   for p in os.environ.get("PATH", "").split(":")):
            print(f"SKIP: needs {tool}")
            return SKIP
    try:
        import redis  # noqa: F401: needed by the kit and the nodes
        from redis.cluster import RedisCluster
        from hotkeyd_client import HotkeyClient
        from lab import CpuQuota, Skip
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP

    # redis-py logs each MOVED its cluster clients follow during the failover, with a trace.
    logging.getLogger("redis").setLevel(logging.CRITICAL)
    work = e2e.Workdir("failover")
    ok = False
    quotas, stop, threads, kit = [], threading.Event(), [], None
    try:
        nodes = [Node(work, i) for i in range(6)]
        subprocess.run(["redis-cli", "--cluster", "create", *(n.address for n in nodes),
                        "--cluster-replicas", "1", "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
        for n in nodes:
            e2e.wait_until(lambda: b"cluster_state:ok" in n.client.execute_command(
                "CLUSTER", "INFO"), 30, f"node {n.address} sees the cluster ok", interval=0.1)
        for n in nodes:
            n.hotkeyd = e2e.Hotkeyd(a.hotkeyd, "--udp.listen-address=", "--tap.interface=lo",
                                    f"--tap.port={n.port}", "--tap.protocol=redis",
                                    f"--shard.address={n.address}", work=work,
                                    log_path=work.file(f"hotkeyd-{n.i}.log"))
        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port, socket_timeout=5)
        slot = key_slot(HOT.encode())
        primary = next(n for n in nodes if n.port == rc.get_node_from_key(HOT).port)
        replica = next(n for n in nodes if n.role() == "slave" and int(n.client.info(
            "replication")["master_port"]) == primary.port)
        e2e.log(f"{HOT} (slot {slot}) on {primary.address}, replica {replica.address}")
        # The background reads keys the hot key's primary serves, so that its load is the
        # one the quota sizes.
        mine = [k for k in (f"bg:{i}" for i in range(20000))
                if rc.get_node_from_key(k).port == primary.port][:2000]
        rc.set(HOT, 0)

        feeds = [n.hotkeyd.url("") for n in nodes]
        kit = HotkeyClient(RedisCluster(host="127.0.0.1", port=nodes[0].port, socket_timeout=5),
                           feeds)
        e2e.check(kit.wait_synced(15), "the kit follows all six feeds")

        def background():
            bg = RedisCluster(host="127.0.0.1", port=nodes[0].port, socket_timeout=5)
            rnd = random.Random(3)
            nxt = time.monotonic()
            while not stop.is_set():
                try:
                    p = bg.pipeline()
                    for _ in range(50):
                        p.get(rnd.choice(mine))
                    p.execute()
                except Exception:  # noqa: BLE001: a failover moves the slots under it
                    time.sleep(0.1)
                nxt += 50 / a.bg_ops
                d = nxt - time.monotonic()
                if d > 0:
                    time.sleep(d)
                elif d < -1:
                    nxt = time.monotonic()

        calls = {"ok": 0, "err": 0}

        def hot():
            rnd = random.Random(4)
            nxt = time.monotonic()
            while not stop.is_set():
                for _ in range(10):
                    try:
                        kit.incr(HOT) if rnd.random() < 0.05 else kit.get(HOT)
                        calls["ok"] += 1
                    except Exception:  # noqa: BLE001: counted
                        calls["err"] += 1
                nxt += 10 / a.hot_ops
                d = nxt - time.monotonic()
                if d > 0:
                    time.sleep(d)
                elif d < -1:
                    nxt = time.monotonic()

        def sender():
            key_b64 = base64.b64encode(HOT.encode()).decode()
            last, last_t = kit.stats()["cache_hits"], time.monotonic()
            while not stop.wait(1.0):
                hits, t = kit.stats()["cache_hits"], time.monotonic()
                if hits <= last:
                    last_t = t
                    continue
                body = json.dumps({"interval_seconds": round(t - last_t, 3), "keys": [
                    {"key_b64": key_b64, "reads": hits - last, "writes": 0}]}).encode()
                for n in nodes:
                    try:
                        entries = json.loads(urllib.request.urlopen(
                            n.hotkeyd.url("/api/v1/hotkeys"), timeout=2).read())["entries"]
                        if any(e.get("key") == HOT for e in entries):
                            urllib.request.urlopen(urllib.request.Request(
                                n.hotkeyd.url("/api/v1/hotkeys/demand"), data=body,
                                headers={"Content-Type": "application/json"}), timeout=2)
                    except OSError:
                        pass
                last, last_t = hits, t

        for f in [background, hot] + ([sender] if a.report_from_test else []):
            t = threading.Thread(target=f, daemon=True)
            t.start()
            threads.append(t)

        def fix():
            for e in kit.entries():
                k = e.key.decode() if isinstance(e.key, bytes) else e.key
                if k == HOT and not e.prefix:
                    return e.mode
            return None

        def naming():
            """The nodes whose hotkeyd's feed names the key: "old" (its primary before the
            failover), "new" (the promoted replica), or another's index."""
            out = []
            for n in nodes:
                try:
                    entries = json.loads(urllib.request.urlopen(
                        n.hotkeyd.url("/api/v1/hotkeys"), timeout=2).read())["entries"]
                except OSError:
                    continue
                if any(e.get("key") == HOT for e in entries):
                    out.append("old" if n is primary else "new" if n is replica else n.i)
            return out

        time.sleep(12)
        c0, t0 = primary.cpu(), time.monotonic()
        time.sleep(8)
        used = (primary.cpu() - c0) / (time.monotonic() - t0)
        cpus = used / 0.9
        e2e.log(f"the primary used {used:.4f} CPUs; quota {cpus:.4f} CPUs on it and its replica")
        for n in (primary, replica):
            try:
                q = CpuQuota(f"failover-{os.getpid()}-{n.i}")
            except (OSError, Skip) as e:
                print(f"SKIP: no CPU quota possible: {e}")
                return SKIP
            quotas.append(q)
            q.add(n.proc.pid)
            q.set(cpus)
        t_quota = time.monotonic()
        # An op costs less under a quota (and the cost moves with what shares the CPU): read
        # the primary's busy fraction under it and set it again until it is near 0.9, clearly
        # over the advice's target, as long as no fix has reached the kit (a fix lowers it).
        for _ in range(5):
            time.sleep(1)
            c0, t0 = primary.cpu(), time.monotonic()
            time.sleep(5)
            if fix():
                break
            busy = (primary.cpu() - c0) / (time.monotonic() - t0) / cpus
            e2e.log(f"under {cpus:.4f} CPUs: {busy:.3f} busy")
            if abs(busy - 0.9) <= 0.03 or busy >= 0.99:
                break
            cpus *= busy / 0.9
            for q in quotas:
                q.set(cpus)
        e2e.wait_until(fix, 90, "the fix in force at the kit", interval=0.25)
        t_fix = time.monotonic()
        e2e.log(f"fix {fix()} in force {t_fix - t_quota:.1f} s after the quota")
        time.sleep(15)
        timeline = []
        e2e.log(f"CLUSTER FAILOVER on {replica.address}")
        replica.client.execute_command("CLUSTER", "FAILOVER")
        t_fo = time.monotonic()
        gap_start, longest, samples = None, 0.0, 0
        while time.monotonic() < t_fo + a.after:
            now = time.monotonic()
            f = fix()
            if f is None and gap_start is None:
                gap_start = now
            elif f is not None and gap_start is not None:
                longest = max(longest, now - gap_start)
                gap_start = None
            samples += 1
            if samples % 4 == 1:  # one a second
                timeline.append({"t": round(now - t_fo, 2), "fix": f,
                                 "old": primary.role(), "new": replica.role(),
                                 "feeds_naming_it": naming()})
            time.sleep(0.25)
        if gap_start is not None:
            longest = max(longest, time.monotonic() - gap_start)
        roles = {n.address: e2e.metric_value(n.hotkeyd.metrics_text(), "hotkey_shard_role_info",
                                             {"role": "replica"}) for n in (primary, replica)}
        old_log = open(primary.hotkeyd.log_path).read()
        new_log = open(replica.hotkeyd.log_path).read()
        result = {"quota_cpus": round(cpus, 4), "seconds_quota_to_fix": round(t_fix - t_quota, 1),
                  "longest_gap_after_failover": round(longest, 2), "calls": calls,
                  "kit": kit.stats(), "timeline": timeline}
        print(json.dumps(result, indent=1))
        e2e.check(primary.role() == "slave" and replica.role() == "master", "the failover happened")
        e2e.check(roles[primary.address] == 1, "the old primary's hotkeyd says replica")
        e2e.check(roles[replica.address] is None, "the promoted node's hotkeyd does not say replica")
        e2e.check("the shard's role changed" in old_log and "the shard's role changed" in new_log,
                  "both hotkeyds log the change of role")
        e2e.check(longest <= MAX_GAP, f"at most {MAX_GAP:.0f} s without the fix after the failover "
                  f"(longest {longest:.1f} s)")
        ok = True
        return 0
    finally:
        stop.set()
        if kit:
            kit.close()
        for q in quotas:
            q.remove()
        e2e.Procs.stop_all()
        if not ok:
            print(work.log_tails())
        work.finish(ok)


if __name__ == "__main__":
    sys.exit(main())
