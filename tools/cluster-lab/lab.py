#!/usr/bin/python3
"""The cluster lab: the shard load model against real Redis shards and real client code.

One command starts, on loopback only:
  * N redis-server shards (default 8), made one Redis Cluster of N primaries (`redis-cli
    --cluster create`); the lab reads the slot table (CLUSTER SLOTS) and sends every
    command to the shard serving its key's slot (CRC16/XMODEM of the key, or of its
    {hash tag}, mod 16384), so there are no redirections;
  * each shard in a cgroup of its own with a CPU quota, so that it really saturates at the
    lab's capacity C (see "The shards' size" below);
  * one hotkeyd per shard, tapping that shard's port (--tap.interface=lo), with none of the
    --cluster.capacity, --cluster.shards and --cluster.app-servers flags: each measures
    them. Capacity from its shard (INFO's CPU time, the cgroup's quota) asked every 1 s
    (--shard.interval=1s, the shortest allowed), shards from CLUSTER NODES, app servers from the client hosts the
    tap sees (one on loopback, though the lab runs several app workers: the model's
    refresh load is then A = 1 refresh per TTL, not one per worker, a difference of a few
    ops/s). Only the fixes' parameters are flags (--cluster.refresh, replicas, split,
    target). The rules file (--config.file) sets alert.min_dwell 0s; the advice keeps the
    defaults (its fix changes when the projections pass the target by alert.advice_margin);
  * a real Prometheus scraping all hotkeyds with the shipped recording rules and alerts
    (deploy/prometheus/hotkeyd.rules.yml, targets labelled cluster/shard as in
    deploy/prometheus/scrape.yml); the lab's time scale is seconds, so `for:` and
    `keep_firing_for:` are shortened by deploy/prometheus/shorten-for.sh and the page's
    2m averaging window is shortened to --avg-window;
  * a load driver: A app-server worker processes (two request threads each) sending T ops/s
    in total, a hot key at share h of them, the rest spread evenly over every shard.

Each fix is the client code a user would write (class HotKeyClient below), switched live:
  cache        a local copy per app worker, 1 s TTL, refreshed by a single in-flight fetch;
  replicate    R copies on R distinct shards; a read picks one, a write goes to all;
  split        S sub-keys on S distinct shards; a write picks one at random, a read gets all;
  split_cache  split, with the read total cached per app worker for the TTL.
The copies and sub-keys get suffixes whose slots land on distinct shards (printed at start).

The lab also feeds the shards' measured loads back: twice a second it writes each shard's
ops/s over the last 4 s, with the fix in force, to every hotkeyd's
--model.measured-loads-file, so the burnt shard's landing page shows the measured loads
beside the projected ones; at the end of each mix the check reads the page's figures
from /api/v1/measured, and after the last mix also as headless Chromium draws the page.

The shards' size. Before the hotkeyds start, the lab calibrates: with no quota, it drives
the background mix (GET, 10% SET, spread over every shard) at the lab's total rate for
--calibrate-seconds and divides the commands the shards served (INFO commandstats) by the
CPU-seconds they used (INFO used_cpu_sys + used_cpu_user): commands per CPU-second, and
the quota C / that rate (printed), in CPUs, with the shortest period of at least 10 ms
whose quota is at least the kernel's 1 ms minimum. A redis-server's cost per command
falls as its load rises (a busy one reads several requests per wakeup; its timers cost
the same at any load), so a shard sized so serves more than C when saturated, and
hotkeyd's measured capacity (ops/s over busy fraction) moves with the load: the run
prints both, per phase, beside the same figure from INFO. Here that is cgroup v1's
cpu controller (/sys/fs/cgroup/cpu/cluster-lab-<pid>-<i>: cpu.cfs_period_us,
cpu.cfs_quota_us, cgroup.procs) or, where only cgroup v2 is mounted, cpu.max in a child of
the v2 root with +cpu in its cgroup.subtree_control. The cgroups are removed when the lab
ends, however it ends (short of SIGKILL: then `rmdir` them). Without root or a writable
cgroup hierarchy the lab exits 77. To size a redis-server by hand on another host:
  systemd-run --scope -p CPUQuota=2% redis-server ...           (systemd, v1 or v2)
  cgcreate -g cpu:/shard0; cgset -r cpu.cfs_quota_us=2000 shard0  (libcgroup, v1)
    cgset -r cpu.cfs_period_us=100000 shard0; cgexec -g cpu:shard0 redis-server ...
  mkdir /sys/fs/cgroup/shard0; echo "2000 100000" > /sys/fs/cgroup/shard0/cpu.max;
    echo $PID > /sys/fs/cgroup/shard0/cgroup.procs                (v2, as root)
(2000 us per 100 ms is 0.02 CPUs: put C / your own calibration there.)

Load is measured from Redis itself: the deltas of INFO commandstats calls per second on
each shard (INFO and CLUSTER, the probes', excluded), over the capacity the burnt shard's
hotkeyd measured. The model's projection comes from hotkey::model's formulas
(shard_model.h), recomputed here with the inputs that hotkeyd reports (/api/v1/top
"model": capacity, shards, app servers) at the rate the driver achieved. With no fix the
burnt shard is saturated (its busy fraction near 1; the driver's latency on it rises, and
the driver, whose request threads wait on it, achieves less than its target): hotkeyd
sees the rate the shard serves, so its advice is the model's at that rate, which the lab
checks; the fix the lab expects to resolve the alert is the model's at the target rate.
The two differ when saturation hides enough of the demand (the lab logs a NOTE).
The run reports, per phase, the burnt shard's busy fraction (INFO, and hotkeyd's
hotkey_shard_cpu_busy_ratio) and the driver's mean latency of its background commands
to it, beside the other shards'.

The loop, closed (--loop). Instead of the lab switching fixes, the app workers reach the hot
key through hotkeyd's Python kit (clients/python: one HotkeyClient per app worker around a
redis.RedisCluster, following all N hotkeyds' feeds), and the key is a counter (INCR, GET).
For each mix the key starts cold; at onset its share jumps to h, and nobody acts: its
shard's hotkeyd detects it through the tap, advises, pushes the fix on its feed, the kits
apply it. The run reports, per mix, when the feed pushed the fix and when the shards got
relief (the end of the first 1 s window, after an overloaded one, in which every shard served
at most the target x the capacity its hotkeyd measured), when the critical alert fired and
resolved, the busiest and least busy shard against the model's projection for the fix
pushed, and the staleness readers saw (bounded from the INCRs' send and reply times: see
loop_staleness). Then the key cools, the feed withdraws the fix (feed.hold 2 s here) and the
kits fold the split counter back: the counter must equal the driver's ledger of
acknowledged INCRs, with no sub-key left.

Usage: tools/cluster-lab/lab.py --hotkeyd build/daemon/hotkeyd [--quick] [--check] [--loop]
  --check exits 1 unless detection, the model-vs-measured table, the alert loop and the
  landing page's table all hold (what tests/lab/cluster_lab_test.sh runs); it exits 77
  (skipped, with the reason) when the driver kept under 90% of its rate in a phase where
  no shard was saturated, since the machine, not the model, was then measured. Needs root
  (CAP_NET_RAW for the tap, cgroups for the quotas), redis-server and redis-cli,
  prometheus and promtool, and Debian's python3-redis.
"""

import argparse
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLOTS = 16384

# ---------------------------------------------------------------- slots


def crc16(data: bytes) -> int:
    """CRC16/XMODEM, the Redis Cluster key-slot CRC (polynomial 0x1021, init 0)."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key: bytes) -> int:
    """The Redis Cluster slot of `key`: a non-empty {tag} is hashed instead of the key."""
    s = key.find(b"{")
    if s != -1:
        e = key.find(b"}", s + 1)
        if e != -1 and e != s + 1:
            key = key[s + 1:e]
    return crc16(key) % SLOTS


# The cluster's slot table: SLOT_OWNER[slot] is the lab's index of the shard serving it,
# read from CLUSTER SLOTS once the cluster is up (before the app workers fork).
SLOT_OWNER = None


def shard_of(key, n):
    """The shard serving `key`: from the cluster's slot table once it is read, else the
    contiguous ranges [i*16384/n, (i+1)*16384/n)."""
    if isinstance(key, str):
        key = key.encode()
    if SLOT_OWNER is not None:
        return SLOT_OWNER[key_slot(key)]
    return key_slot(key) * n // SLOTS


def keys_on_distinct_shards(base, shards, n, tag):
    """Names base:<tag><i> whose slots land on each shard of `shards`, in that order."""
    out = []
    for want in shards:
        i = 0
        while True:
            k = f"{base}:{tag}{i}"
            if shard_of(k, n) == want and k not in out:
                out.append(k)
                break
            i += 1
    return out


# ---------------------------------------------------------------- the model


def project(n, capacity, total, share, w, app_servers, refresh, replicas, split):
    """hotkey::model::Project for one key (shard_model.h): busiest and least busy / C."""
    b = total * (1 - share) / n
    h = total * share
    hr, hw = h * (1 - w), h * w
    refresh_load = app_servers / refresh
    out = {}
    for s, touched, extra in (("none", 1, h), ("cache", 1, hw + refresh_load),
                              ("replicate", replicas, hr / replicas + hw),
                              ("split", split, hw / split + hr),
                              ("split_cache", split, hw / split + refresh_load)):
        busy = (b + extra) / capacity
        out[s] = (busy, b / capacity if touched < n else busy)
    return out


def advise(proj, target=0.8):
    for s in ("none", "cache", "replicate", "split", "split_cache"):
        if proj[s][0] <= target * (1 + 1e-12):
            return s
    return "isolate"


# ---------------------------------------------------------------- the client code

MODES = ["none", "cache", "replicate", "split", "split_cache"]


class SingleFlightCache:
    """One app server's local copy of a value with a TTL. When it expires, exactly one
    caller fetches it (single flight); the others wait for that fetch, not the shard.
    Thread-safe."""

    def __init__(self, ttl):
        self.ttl = ttl
        self.lock = threading.Lock()
        self.value = None
        self.expires = 0.0
        self.inflight = None  # threading.Event of the fetch in flight, if any

    def get(self, fetch):
        while True:
            with self.lock:
                now = time.monotonic()
                if now < self.expires:
                    return self.value
                ev = self.inflight
                if ev is None:
                    ev = self.inflight = threading.Event()
                    leader = True
                else:
                    leader = False
            if not leader:
                ev.wait()
                continue
            try:
                v = fetch()
            finally:
                with self.lock:
                    self.inflight = None
            with self.lock:
                self.value = v
                self.expires = time.monotonic() + self.ttl
            ev.set()
            return v

    def put(self, v):
        with self.lock:
            self.value = v

    def clear(self):
        with self.lock:
            self.expires = 0.0


def call(conn, *args):
    """One command on one connection: send it, read its reply."""
    conn.send_command(*args)
    return conn.read_response()


def fan_out(cmds):
    """Send every (connection, command) first, then read every reply: the shards work in
    parallel, as a client's concurrent fan-out would."""
    for c, args in cmds:
        c.send_command(*args)
    return [c.read_response() for c, _ in cmds]


class HotKeyClient:
    """The application's access to the hot key under each fix. One per app server: its
    caches are shared by the server's request threads; each thread passes its own
    connections (`conns[i]` to shard i, redis-py Connection objects). Thread-safe."""

    def __init__(self, n, key, replicas, subkeys, ttl):
        self.n = n
        self.key = key
        self.key_shard = shard_of(key, n)
        self.replicas = [(k, shard_of(k, n)) for k in replicas]  # R distinct shards
        self.subkeys = [(k, shard_of(k, n)) for k in subkeys]    # S distinct shards
        self.cache = SingleFlightCache(ttl)        # for "cache"
        self.total_cache = SingleFlightCache(ttl)  # for "split_cache"

    def _read_all(self, conns):
        return fan_out([(conns[s], ("GET", k)) for k, s in self.subkeys])

    def read(self, conns, rng, mode):
        if mode == "none":
            return call(conns[self.key_shard], "GET", self.key)
        if mode == "cache":
            return self.cache.get(lambda: call(conns[self.key_shard], "GET", self.key))
        if mode == "replicate":
            k, s = rng.choice(self.replicas)
            return call(conns[s], "GET", k)
        if mode == "split":
            return self._read_all(conns)
        if mode == "split_cache":
            return self.total_cache.get(lambda: self._read_all(conns))
        raise ValueError(mode)

    def write(self, conns, rng, mode, value):
        if mode in ("none", "cache"):
            call(conns[self.key_shard], "SET", self.key, value)
            if mode == "cache":
                self.cache.put(value)  # write-through to the local copy, no re-read
        elif mode == "replicate":
            fan_out([(conns[s], ("SET", k, value)) for k, s in self.replicas])
        elif mode in ("split", "split_cache"):
            k, s = rng.choice(self.subkeys)
            call(conns[s], "SET", k, value)
        else:
            raise ValueError(mode)


# ---------------------------------------------------------------- the load driver


class KitAccess:
    """The hot key through hotkeyd's client kit (clients/python), as an application would
    use it: one HotkeyClient per app server around a redis.RedisCluster, following every
    node's hotkeyd. The key is a counter: a write is INCR, a read GET. Records each write's
    send and reply times and each read's start time and value (the staleness check), and
    counts acknowledged writes in the driver's ledger."""

    def __init__(self, ports, feeds, key, ledger):
        sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
        from hotkeyd_client import HotkeyClient
        self.rc = redis.RedisCluster(host="127.0.0.1", port=ports[0])
        self.kit = HotkeyClient(self.rc, feeds)
        self.key = key
        self.ledger = ledger
        self.lock = threading.Lock()
        self.writes = []  # (sent, replied), monotonic
        self.reads = []   # (started, value)

    def write(self):
        t = time.monotonic()
        self.kit.incr(self.key)
        t2 = time.monotonic()
        with self.ledger.get_lock():
            self.ledger.value += 1
        with self.lock:
            self.writes.append((t, t2))

    def read(self):
        t = time.monotonic()
        v = self.kit.get(self.key)
        with self.lock:
            self.reads.append((t, int(v or 0)))

    def close(self):
        self.kit.close()
        return dict(writes=self.writes, reads=self.reads, stats=self.kit.stats())


def app_worker(wid, ports, plan, ctl, stop, threads_per_worker, out=None):
    """One app server: `threads_per_worker` request threads sharing one HotKeyClient (or,
    with plan["feeds"], one KitAccess, whose records go to `out` at the end). Each thread
    paces its share of the worker's ops on a fixed schedule; the op sequence is
    deterministic (error diffusion), so the hot share and write ratio are exact."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    client = HotKeyClient(len(ports), plan["key"], plan["replicas"], plan["subkeys"],
                          plan["ttl"])
    kit = KitAccess(ports, plan["feeds"], plan["key"], ctl["ledger"]) if plan.get(
        "feeds") else None
    pools = plan["pools"]
    n = len(ports)
    rate = plan["rate_per_worker"] / threads_per_worker

    def run(tid):
        rng = random.Random(wid * 1000 + tid)
        conns = [redis.Connection(host="127.0.0.1", port=p, socket_timeout=5) for p in ports]
        period = 1.0 / rate
        hot_acc = 0.0
        w_acc = 0.0
        shard = (wid * threads_per_worker + tid) % n
        last_mode = None
        next_t = time.monotonic()
        done = 0
        while not stop.is_set():
            now = time.monotonic()
            if next_t > now:
                time.sleep(next_t - now)
            elif now - next_t > 0.1:
                next_t = now  # fell behind: do not burst to catch up
            next_t += period
            mode = MODES[ctl["mode"].value]
            if mode != last_mode:
                client.cache.clear()
                client.total_cache.clear()
                last_mode = mode
            hot_acc += ctl["share"].value
            if hot_acc >= 1.0:
                hot_acc -= 1.0
                w_acc += ctl["write"].value
                if w_acc >= 1.0:
                    w_acc -= 1.0
                    if kit:
                        kit.write()
                    else:
                        client.write(conns, rng, mode, b"v%d" % done)
                elif kit:
                    kit.read()
                else:
                    client.read(conns, rng, mode)
            else:
                k = rng.choice(pools[shard])
                t = time.monotonic()
                if rng.random() < 0.1:
                    call(conns[shard], "SET", k, b"x")
                else:
                    call(conns[shard], "GET", k)
                lat = time.monotonic() - t
                with ctl["latency"].get_lock():
                    ctl["latency"][2 * shard] += lat
                    ctl["latency"][2 * shard + 1] += 1
                shard = (shard + 1) % n
            done += 1
            with ctl["ops"].get_lock():
                ctl["ops"].value += 1

    ts = [threading.Thread(target=run, args=(t,), daemon=True) for t in range(threads_per_worker)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if kit:
        out.put((wid, kit.close()))


# ---------------------------------------------------------------- processes


def die_with_parent():
    """In a child before exec: the kernel sends it SIGTERM when the lab dies, however it
    dies (a test runner's kill included), so no server outlives the lab."""
    import ctypes
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_until(what, fn, timeout, interval=0.25):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - a service still starting
            last = e
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def http_json(url, timeout=3):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def http_text(url, timeout=3):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class Skip(Exception):
    """The lab cannot run here, or its driver could not keep its rate: exit 77."""


class CpuQuota:
    """A cgroup of its own for one process, with a CPU quota: cgroup v1's cpu controller
    (cpu.cfs_quota_us / cpu.cfs_period_us) where it is mounted, else v2's cpu.max. Needs
    root. remove() moves the process back to the root cgroup and deletes the cgroup."""

    def __init__(self, name):
        self.v1 = self.v2 = None
        with open("/proc/self/mountinfo") as f:
            for line in f:
                pre, post = line.split(" - ", 1)
                fstype, _, opts = post.split()[:3]
                point = pre.split()[4]
                if fstype == "cgroup" and "cpu" in opts.split(","):
                    self.v1 = point
                elif fstype == "cgroup2" and self.v2 is None:
                    self.v2 = point
        if self.v1:
            self.root = self.v1
        elif self.v2 and "cpu" in open(f"{self.v2}/cgroup.controllers").read().split():
            self.root = self.v2
            with open(f"{self.root}/cgroup.subtree_control", "w") as f:
                f.write("+cpu")  # OSError when not root: the caller's skip
        else:
            raise Skip("no cgroup hierarchy with the cpu controller is mounted")
        self.dir = os.path.join(self.root, name)
        os.mkdir(self.dir)
        self.pids = []

    def add(self, pid):
        with open(f"{self.dir}/cgroup.procs", "w") as f:
            f.write(str(pid))
        self.pids.append(pid)

    def set(self, cpus):
        """Limits the cgroup to `cpus` CPUs (None: no limit). The period is the shortest
        of at least 10 ms in which the quota is at least the kernel's minimum, 1 ms."""
        period = 100_000 if cpus is None else max(10_000, int(1000 / cpus) + 1)
        quota = None if cpus is None else int(cpus * period)
        if self.root == self.v1:
            # No limit while the period changes, then the quota.
            for name, v in (("cpu.cfs_quota_us", -1), ("cpu.cfs_period_us", period),
                            ("cpu.cfs_quota_us", -1 if quota is None else quota)):
                with open(f"{self.dir}/{name}", "w") as f:
                    f.write(str(v))
        else:
            with open(f"{self.dir}/cpu.max", "w") as f:
                f.write(f"{'max' if quota is None else quota} {period}")
        return quota, period

    def remove(self):
        for pid in self.pids:
            try:
                with open(f"{self.root}/cgroup.procs", "w") as f:
                    f.write(str(pid))
            except OSError:
                pass  # gone already
        for _ in range(50):
            try:
                os.rmdir(self.dir)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)  # a process still leaving
        print(f"[lab] could not remove cgroup {self.dir}", file=sys.stderr)


def verdict(checks, shortfalls):
    """True when every (ok, what) check passed; raises Skip when the driver fell short of
    its rate where no shard was saturated (the machine, not the model, was measured)."""
    failed = [w for ok, w in checks if not ok]
    print(f"{len(checks) - len(failed)} passed, {len(failed)} failed")
    if failed:
        return False
    if shortfalls:
        raise Skip("the driver fell short of its rate (under 90%) where no shard was "
                   "saturated, so the run proves nothing: " + "; ".join(shortfalls))
    return True


class Lab:
    def __init__(self, args):
        self.a = args
        self.tmp = tempfile.mkdtemp(prefix="cluster-lab-")
        self.procs = []
        self.n = args.shards
        self.ports = []
        self.web_ports = []
        self.log_lines = []
        # The shards' measured loads, fed back to every hotkeyd's landing page.
        self.loads_file = os.path.join(self.tmp, "measured-loads.json")
        self.feed_hold = threading.Event()  # set: the feed writes nothing
        self.cgroups = []  # CpuQuota per shard
        self.cpus = None  # each shard's CPU quota, in CPUs
        self.feed_rates = {}  # (mode index, write ratio) -> driver's ops/s in the last feed

    def log(self, msg):
        line = f"[lab {time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)

    def spawn(self, name, argv):
        f = open(os.path.join(self.tmp, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, cwd=self.tmp,
                             preexec_fn=die_with_parent)
        self.procs.append((name, p))
        return p

    def start(self):
        a = self.a
        for i in range(self.n):
            try:
                self.cgroups.append(CpuQuota(f"cluster-lab-{os.getpid()}-{i}"))
            except OSError as e:
                raise Skip(f"cannot make a cgroup with a CPU quota ({e}): run as root, with "
                           "a writable cgroup hierarchy with the cpu controller") from e
        for i in range(self.n):
            port = free_port()
            d = os.path.join(self.tmp, f"redis{i}")
            os.mkdir(d)
            p = self.spawn(f"redis{i}", [
                a.redis_server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", d, "--protected-mode", "no",
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-port", str(free_port())])
            self.cgroups[i].add(p.pid)
            self.ports.append(port)
        self.conns = [redis.Redis(host="127.0.0.1", port=p) for p in self.ports]
        for i, c in enumerate(self.conns):
            wait_until(f"redis shard {i}", c.ping, 10)
        self.make_cluster()
        self.make_pools()
        self.calibrate()
        # The daemons' policy: a key is hot as soon as it crosses its threshold (the lab's
        # time scale is seconds).
        rules_path = os.path.join(self.tmp, "hotkeyd-rules.yml")
        with open(rules_path, "w") as f:
            # A fix the feed published is withdrawn 2 s after its key stops being hot (this
            # ends a mix sooner; it does not bear on onset to relief).
            f.write(("" if a.defaults else "alert:\n  min_dwell: 0s\n") + "feed:\n  hold: 2s\n")
        # The lab's time scale, or with --defaults the shipped one.
        time_scale = [] if a.defaults else [
            "--shard.interval=1s", "--track.half-life=1s", "--track.rate-window=2s"]
        for i, port in enumerate(self.ports):
            wp = free_port()
            self.web_ports.append(wp)
            self.spawn(f"hotkeyd{i}", [
                a.hotkeyd, f"--web.listen-address=127.0.0.1:{wp}",
                "--udp.listen-address=127.0.0.1:0",
                # As root, keep root: the unprivileged user hotkeyd would switch to cannot
                # read the lab's private directory.
                *(["--run-as=root"] if os.geteuid() == 0 else []),
                "--tap.interface=lo", f"--tap.port={port}", "--tap.protocol=redis",
                "--tap.snaplen=4096", "--tap.buffer-bytes=4MiB", *time_scale,
                f"--cluster.refresh={a.ttl:g}s",
                f"--cluster.replicas={a.replicas}", f"--cluster.split={a.split}",
                f"--cluster.target={a.target:g}",
                f"--config.file={rules_path}",
                f"--model.measured-loads-file={self.loads_file}",
                "--model.measured-loads-max-age=15s", "--log.level=warn"])
        for i, wp in enumerate(self.web_ports):
            wait_until(f"hotkeyd {i}", lambda: http_text(f"http://127.0.0.1:{wp}/-/ready"), 15)
        # Prometheus: the shipped rules, with the lab's time scale.
        rules = subprocess.run(
            ["sh", os.path.join(ROOT, "deploy/prometheus/shorten-for.sh"),
             os.path.join(ROOT, "deploy/prometheus/hotkeyd.rules.yml"), a.alert_for],
            check=True, capture_output=True, text=True).stdout
        rules, subs = re.subn(r"\[2m\]", f"[{a.avg_window}]", rules)
        assert subs >= 1, "the page's averaging window was not found in the shipped rules"
        with open(os.path.join(self.tmp, "hotkeyd.rules.yml"), "w") as f:
            f.write(rules)
        targets = "\n".join(
            f"      - targets: ['127.0.0.1:{wp}']\n        labels: {{cluster: lab, shard: '{i}'}}"
            for i, wp in enumerate(self.web_ports))
        with open(os.path.join(self.tmp, "prometheus.yml"), "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - hotkeyd.rules.yml
scrape_configs:
  - job_name: hotkeyd
    metrics_path: /metrics
    static_configs:
{targets}
""")
        subprocess.run([a.promtool, "check", "config", os.path.join(self.tmp, "prometheus.yml")],
                       check=True, capture_output=True)
        self.prom_port = free_port()
        self.prom = f"http://127.0.0.1:{self.prom_port}"
        self.spawn("prometheus", [a.prometheus, "--config.file=prometheus.yml",
                                  f"--storage.tsdb.path={self.tmp}/tsdb",
                                  f"--web.listen-address=127.0.0.1:{self.prom_port}"])
        wait_until("prometheus ready", lambda: http_text(self.prom + "/-/ready"), 30)
        wait_until("all hotkeyd targets up",
                   lambda: self.prom_value('count(up{job="hotkeyd"} == 1)') == self.n, 20)
        self.log(f"tmp {self.tmp}; redis ports {self.ports}; hotkeyd web ports "
                 f"{self.web_ports}; prometheus {self.prom}")

    def make_cluster(self):
        """Makes the shards one Redis Cluster of N primaries, and reads its slot table."""
        global SLOT_OWNER
        subprocess.run([self.a.redis_cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports),
                        "--cluster-replicas", "0", "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
        for i, p in enumerate(self.ports):
            conn = redis.Connection(host="127.0.0.1", port=p)
            wait_until(f"shard {i} sees the cluster ok",
                       lambda: b"cluster_state:ok" in call(conn, "CLUSTER", "INFO"), 30)
            conn.disconnect()
        conn = redis.Connection(host="127.0.0.1", port=self.ports[0])
        owner = [None] * SLOTS
        for r in call(conn, "CLUSTER", "SLOTS"):
            shard = self.ports.index(int(r[2][1]))
            for slot in range(int(r[0]), int(r[1]) + 1):
                owner[slot] = shard
        conn.disconnect()
        assert None not in owner, "the cluster leaves slots unserved"
        SLOT_OWNER = owner
        self.log("cluster slots: " + ", ".join(
            f"shard {i} (port {p}) {owner.count(i)} slots" for i, p in enumerate(self.ports)))

    def make_pools(self):
        """64 background keys per shard, found by their slots."""
        n = self.n
        self.pools = [[] for _ in range(n)]
        i = 0
        while min(len(p) for p in self.pools) < 64:
            k = f"bg:{i}"
            s = shard_of(k, n)
            if len(self.pools[s]) < 64:
                self.pools[s].append(k)
            i += 1

    def cpu(self, c):
        """CPU-seconds the shard's main thread used (what hotkeyd's prober reads), and in
        all its threads (what the quota limits)."""
        st = c.info("cpu")
        main = st.get("used_cpu_sys_main_thread", st["used_cpu_sys"]) + st.get(
            "used_cpu_user_main_thread", st["used_cpu_user"])
        return main, st["used_cpu_sys"] + st["used_cpu_user"]

    def drive(self, plan, seconds, warmup=1.5):
        """Runs the app workers on `plan` for `seconds` after `warmup`: each shard's commands
        served (INFO commandstats) and CPU-seconds used (all threads), and the app's ops."""
        ctl = self.new_ctl()
        ctl["write"].value = 0.1
        ctl["share"].value = plan["share"]
        stop = mp.Event()
        workers = [mp.Process(target=app_worker, args=(w, self.ports, plan, ctl, stop, 2),
                              daemon=True) for w in range(self.a.app_servers)]
        for w in workers:
            w.start()
        try:
            time.sleep(warmup)
            c0, u0, o0, t0 = self.calls(), [self.cpu(c)[1] for c in self.conns], \
                ctl["ops"].value, time.monotonic()
            time.sleep(seconds)
            c1, u1, o1, t1 = self.calls(), [self.cpu(c)[1] for c in self.conns], \
                ctl["ops"].value, time.monotonic()
        finally:
            stop.set()
            for p in workers:
                p.join(timeout=5)
                if p.is_alive():
                    p.terminate()
        dt = t1 - t0
        return ([(y - x) / dt for x, y in zip(c0, c1)], [(y - x) / dt for x, y in zip(u0, u1)],
                (o1 - o0) / dt)

    def calibrate(self):
        """Sets each shard's CPU quota to C / (commands one redis-server serves per
        CPU-second), that rate measured with no quota for the background mix (GET, 10%
        SET, every op to the next shard) at the lab's total rate."""
        a = self.a
        for cg in self.cgroups:
            cg.set(None)
        plan = dict(key=a.key, replicas=[], subkeys=[], ttl=a.ttl, pools=self.pools,
                    share=0.0, rate_per_worker=a.ops / a.app_servers)
        ops, cpu, app = self.drive(plan, a.calibrate_seconds)
        self.ops_per_cpu_second = sum(ops) / sum(cpu)
        self.cpus = a.capacity / self.ops_per_cpu_second
        quota, period = 0, 0
        for cg in self.cgroups:
            quota, period = cg.set(self.cpus)
        self.log(f"calibration: {app:.0f} app ops/s for {a.calibrate_seconds:g} s; commands "
                 f"per CPU-second per shard " + " ".join(f"{o / u:.0f}" for o, u in zip(ops, cpu)) +
                 f"; all shards {self.ops_per_cpu_second:.0f}; quota for {a.capacity:g} ops/s: "
                 f"{self.cpus:.4f} CPUs ({quota} us per {period} us, "
                 f"{'cgroup v1' if self.cgroups[0].root == self.cgroups[0].v1 else 'cgroup v2'})")

    def new_ctl(self):
        return dict(mode=mp.Value("i", 0), write=mp.Value("d", 0.05), ops=mp.Value("q", 0),
                    latency=mp.Array("d", 2 * self.n), share=mp.Value("d", self.a.share),
                    ledger=mp.Value("q", 0))

    def stop(self):
        # The cgroups first: a process that has exited but is not yet reaped stays in its
        # cgroup and would keep it from being removed.
        for cg in self.cgroups:
            cg.remove()
        self.cgroups = []
        for _, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for _, p in reversed(self.procs):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if not self.a.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            print(f"[lab] kept {self.tmp}")

    # ------------------------------------------------------------ Prometheus
    def prom_query(self, expr):
        q = urllib.parse.urlencode({"query": expr})
        d = http_json(f"{self.prom}/api/v1/query?{q}")
        return d["data"]["result"]

    def prom_value(self, expr):
        r = self.prom_query(expr)
        return float(r[0]["value"][1]) if r else None

    def alert_state(self, name, key):
        for al in http_json(self.prom + "/api/v1/alerts")["data"]["alerts"]:
            lab = al["labels"]
            if lab.get("alertname") == name and lab.get("key") == key:
                return al["state"], lab.get("shard")
        return None, None

    # ------------------------------------------------------------ measurement
    def calls(self, conns=None):
        """Commands served per shard, from INFO commandstats (INFO and CLUSTER, the lab's
        and the hotkeyds' probes, excluded)."""
        out = []
        for c in conns or self.conns:
            st = c.info("commandstats")
            out.append(sum(v["calls"] for k, v in st.items()
                           if not k.startswith(("cmdstat_info", "cmdstat_cluster"))))
        return out

    def measure(self, seconds):
        """Over `seconds`: each shard's commands per second (INFO commandstats), its busy
        fraction of its quota (INFO's main-thread CPU, as hotkeyd's prober reads it), the
        driver's mean latency of background ops to it, and the driver's ops/s."""
        lat = self.ctl["latency"]
        c0, t0, o0 = self.calls(), time.monotonic(), self.ctl["ops"].value
        u0, l0 = [self.cpu(c)[0] for c in self.conns], lat[:]
        time.sleep(seconds)
        c1, t1, o1 = self.calls(), time.monotonic(), self.ctl["ops"].value
        u1, l1 = [self.cpu(c)[0] for c in self.conns], lat[:]
        dt = t1 - t0
        ops = [(b - a) / dt for a, b in zip(c0, c1)]
        busy = [(b - a) / dt / self.cpus for a, b in zip(u0, u1)]
        latency = [(l1[2 * i] - l0[2 * i]) / max(1, l1[2 * i + 1] - l0[2 * i + 1])
                   for i in range(self.n)]
        return ops, busy, latency, (o1 - o0) / dt

    def model_inputs(self, i):
        """The model's inputs shard i's hotkeyd reports (/api/v1/top "model"):
        {capacity, shards, app_servers: (value, origin)}, and its shard's busy fraction."""
        m = http_json(f"http://127.0.0.1:{self.web_ports[i]}/api/v1/top")["model"]
        out = {k: (m[k]["value"], m[k]["origin"]) for k in ("capacity", "shards", "app_servers")}
        out["busy"] = m.get("shard", {}).get("busy")
        return out

    def feed_measured_loads(self, stop, key, window=4.0):
        """Every half second, writes each shard's ops/s over the last `window` seconds
        (INFO commandstats deltas) to the hotkeyds' --model.measured-loads-file, with the
        fix in force, atomically (a temporary file renamed over it). A window in which the
        fix or the mix changed is not written: it measured neither."""
        conns = [redis.Redis(host="127.0.0.1", port=p) for p in self.ports]
        hist = []  # (monotonic time, wall time, calls per shard, phase, app ops)
        tmp = self.loads_file + ".tmp"
        while not stop.wait(0.5):
            if self.feed_hold.is_set():
                hist.clear()
                continue
            try:
                phase = (self.ctl["mode"].value, self.ctl["write"].value)
                c, t, wall = self.calls(conns), time.monotonic(), time.time()
                app = self.ctl["ops"].value
                if phase != (self.ctl["mode"].value, self.ctl["write"].value):
                    hist.clear()
                    continue
            except Exception:  # noqa: BLE001 - the shards are stopping
                return
            if hist and hist[-1][3] != phase:
                hist.clear()
            hist.append((t, wall, c, phase, app))
            # The newest sample at least `window` old, whatever the samples' spacing.
            old = [h for h in hist if t - h[0] >= window]
            hist = hist[len(old) - 1:] if old else hist
            if not old:
                continue
            start = old[-1]
            dt = t - start[0]
            doc = {"timestamp": wall, "interval_seconds": round(dt, 3),
                   "strategy": MODES[phase[0]], "key": key,
                   "source": f"INFO commandstats deltas over {dt:.1f} s (cluster lab)",
                   "ops_per_second": [(b - a) / dt for a, b in zip(start[2], c)]}
            with open(tmp, "w") as f:
                json.dump(doc, f)
            os.replace(tmp, self.loads_file)
            self.feed_rates[phase] = (app - start[4]) / dt

    def page_table(self, i, browser):
        """The landing page of shard i's hotkeyd: {strategy: [projected busiest, measured
        busiest, projected least busy, measured least busy]} from its "Projected against
        measured" table (None for an empty cell), and the measurement's line. With
        `browser`, as headless Chromium draws it (its DOM after the page's scripts ran);
        else from /api/v1/measured, the figures the page draws."""
        url = f"http://127.0.0.1:{self.web_ports[i]}/"
        if not browser:
            v = http_json(url + "api/v1/measured")
            rows = {f["strategy"]: [(f["projected"] or {}).get("busiest"),
                                    (f["measured"] or {}).get("busiest"),
                                    (f["projected"] or {}).get("least_busy"),
                                    (f["measured"] or {}).get("least_busy")]
                    for f in v["fixes"]}
            m = v["measurement"]
            return rows, "(/api/v1/measured)" + (" STALE" if m and m["stale"] else "")
        dom = subprocess.run(
            [self.a.chromium, "--headless", "--no-sandbox", "--disable-gpu",
             f"--user-data-dir={self.tmp}/chromium", "--virtual-time-budget=3000",
             "--dump-dom", url], capture_output=True, text=True, timeout=60).stdout
        rows = {}
        for strategy, body in re.findall(r'<tr data-strategy="(\w+)"[^>]*>(.*?)</tr>', dom):
            cells = re.findall(r'<td([^>]*)>', body)
            vals = [re.search(r'data-value="([^"]*)"', c) for c in cells]
            rows[strategy] = [float(v.group(1)) if v else None for v in vals[1:5]]
        m = re.search(r'<div id="versus-measurement"[^>]*>(.*?)</div>', dom, re.S)
        return rows, m.group(1) if m else ""

    def daemon_projection(self, i, key):
        """{strategy: busiest load} that shard i's hotkeyd projects for `key`, in ops/s
        (each load times the capacity it was projected over), and that capacity, from one
        /api/v1/top."""
        top = http_json(f"http://127.0.0.1:{self.web_ports[i]}/api/v1/top")
        cap = top["model"]["capacity"]["value"]
        for k in top["keys"]:
            if k["key"] == key:
                return {s: v * cap for s, v in (k.get("projected_load") or {}).items()}, cap
        return {}, cap

    def shard_ops(self, i):
        """The shard's ops/s as hotkeyd's tap counts them (hotkey_ops_per_second)."""
        text = http_text(f"http://127.0.0.1:{self.web_ports[i]}/metrics")
        return sum(float(m) for m in re.findall(r'^hotkey_ops_per_second\{[^}]*\} (\S+)$',
                                                 text, re.M))

    def hot_keys(self, i):
        """{key: (share, write_ratio, strategy)} of the keys shard i's hotkeyd marks hot."""
        text = http_text(f"http://127.0.0.1:{self.web_ports[i]}/metrics")
        vals = {}
        hot = set()
        advice = {}
        for line in text.splitlines():
            m = re.match(r'(hotkey_key_share_ratio|hotkey_key_write_ratio|hotkey_key_hot'
                         r'|hotkey_key_advice_info)\{(.*)\} (\S+)$', line)
            if not m:
                continue
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
            k = labels.get("key")
            if m.group(1) == "hotkey_key_hot":
                if float(m.group(3)) == 1:
                    hot.add(k)
            elif m.group(1) == "hotkey_key_advice_info":
                advice[k] = labels.get("strategy")
            else:
                vals.setdefault(k, {})[m.group(1)] = float(m.group(3))
        return {k: (vals.get(k, {}).get("hotkey_key_share_ratio"),
                    vals.get(k, {}).get("hotkey_key_write_ratio"), advice.get(k)) for k in hot}

    # ------------------------------------------------------------ the run
    def run(self):
        a = self.a
        n = self.n
        key = a.key
        home = shard_of(key, n)
        others = [s for s in range(n) if s != home]
        replicas = [key] + keys_on_distinct_shards(key, others[:a.replicas - 1], n, "r")
        subkeys = keys_on_distinct_shards(key, ([home] + others)[:a.split], n, "s")
        self.log(f"hot key {key!r}: slot {key_slot(key.encode())}, shard {home}")
        for name, ks in (("replicas", replicas), ("sub-keys", subkeys)):
            shards = [shard_of(k, n) for k in ks]
            self.log(f"{name}: " + ", ".join(f"{k} (slot {key_slot(k.encode())} -> shard {s})"
                                             for k, s in zip(ks, shards)))
            assert len(set(shards)) == len(shards), f"{name} share a shard"
        # Background: 64 keys per shard (make_pools); every op goes to the next shard.
        pools = self.pools
        for k in replicas + subkeys + [key]:
            self.conns[shard_of(k, n)].set(k, b"0")
        plan = dict(key=key, replicas=replicas, subkeys=subkeys, ttl=a.ttl, pools=pools,
                    share=a.share, rate_per_worker=a.ops / a.app_servers)
        self.ctl = self.new_ctl()
        stop = mp.Event()
        workers = [mp.Process(target=app_worker,
                              args=(w, self.ports, plan, self.ctl, stop, 2), daemon=True)
                   for w in range(a.app_servers)]
        for w in workers:
            w.start()
        load_started = time.monotonic()
        feeder = threading.Thread(target=self.feed_measured_loads, args=(stop, key), daemon=True)
        feeder.start()
        self.log(f"{a.app_servers} app workers x 2 threads, {a.ops:g} ops/s, hot share "
                 f"{a.share:g}")
        results = {}  # (w, strategy) -> (proj busiest, proj least, meas busiest, meas least)
        checks = []
        timings = {}

        def check(ok, what):
            checks.append((bool(ok), what))
            self.log(("PASS " if ok else "FAIL ") + what)

        def set_phase(w, mode):
            self.ctl["write"].value = w
            self.ctl["mode"].value = MODES.index(mode)

        rates = {}  # (w, strategy) -> the driver's ops/s
        latencies = {}  # (w, strategy) -> (burnt shard's, median other shard's) latency, s
        busies = {}  # (w, strategy) -> burnt shard's busy fraction (INFO, hotkeyd's)
        shortfalls = []

        def lab_model(inp, rate, w):
            """The model for the lab's mix at `rate` app ops/s, with the inputs a hotkeyd
            measured (capacity, shards, app servers)."""
            return project(int(inp["shards"][0]), inp["capacity"][0], rate, a.share, w,
                           int(inp["app_servers"][0]), a.ttl, a.replicas, a.split)

        def measured(w, mode):
            ops, busy, lat, app_rate = self.measure(a.measure_seconds)
            inputs = [self.model_inputs(i) for i in range(n)]
            inp = inputs[home]
            cap = inp["capacity"][0]
            loads = [x / cap for x in ops]
            busiest = max(range(n), key=lambda s: loads[s])
            pb, pl = lab_model(inp, app_rate, w)[mode]
            mb, ml = max(loads), min(loads)
            results[(w, mode)] = (pb, pl, mb, ml)
            rates[(w, mode)] = app_rate
            latencies[(w, mode)] = (lat[home], statistics.median(lat[s] for s in others))
            busies[(w, mode)] = (busy[home], inp["busy"])
            self.log(f"w={w:.0%} {mode}: app {app_rate:.0f} ops/s; shards " +
                     " ".join(f"{x:.0%}" for x in loads) +
                     f" of shard {home}'s measured capacity {cap:.0f} ops/s; busiest shard "
                     f"{busiest} {mb:.0%} (model {pb:.0%}), least busy {ml:.0%} (model "
                     f"{pl:.0%}); shard {home} busy {busy[home]:.0%} (INFO) "
                     f"{(inp['busy'] or 0):.0%} (hotkeyd), latency {lat[home] * 1e3:.2f} ms "
                     f"(others' median {latencies[(w, mode)][1] * 1e3:.2f} ms)")
            self.log("  capacity per hotkeyd, measured (INFO: commands per CPU-second x "
                     "quota): " + " ".join(
                         f"{i}:{inputs[i]['capacity'][0]:.0f}"
                         f"({ops[i] / busy[i] if busy[i] > 0.05 else float('nan'):.0f})"
                         for i in range(n)))
            check(all(x["capacity"][1] == "measured" and x["shards"] == (n, "measured") and
                      x["app_servers"] == (1, "measured") for x in inputs),
                  f"w={w:.0%} {mode}: every hotkeyd measures its inputs: capacity, "
                  f"shards = {n}, app servers = 1 (loopback)")
            # Shard loads are linear in the app's rate: the model is taken at the rate the
            # driver kept, with the inputs the burnt shard's hotkeyd measured.
            check(abs(mb - pb) <= a.tolerance * pb and abs(ml - pl) <= a.tolerance * pl,
                  f"w={w:.0%} {mode}: busiest and least busy within ±{a.tolerance:.0%} of "
                  f"the model at the driver's {app_rate:.0f} ops/s with shard {home}'s "
                  f"measured inputs (C {cap:.0f}, N {inp['shards'][0]}, A "
                  f"{inp['app_servers'][0]})")
            if mode == "none":
                check(busy[home] >= 0.9,
                      f"w={w:.0%}: with no fix the burnt shard saturates: busy "
                      f"{busy[home]:.0%} of its quota (INFO), {(inp['busy'] or 0):.0%} "
                      f"(hotkeyd_shard_cpu_busy_ratio)")
            # A saturated shard holds the driver's request threads: it then keeps less
            # than its rate by the model's design. Short of it with none saturated, the
            # machine was too busy to measure the model.
            if app_rate < 0.9 * a.ops and max(busy) < 0.9:
                shortfalls.append(f"w={w:.0%} {mode}: the driver kept {app_rate:.0f} of "
                                  f"{a.ops:g} ops/s with no shard saturated")
            return loads, busiest

        def critical():
            return self.alert_state("HotkeydHotKeyCritical", key)

        mixes = [(0.05, ["none", "cache", "replicate", "split"]),
                 (0.95, ["none", "cache", "replicate", "split"]),
                 (0.50, ["none", "split_cache"])]
        if a.quick:
            mixes = [(0.05, ["none", "cache", "replicate", "split"]),
                     (0.95, ["none", "cache", "split"]),
                     (0.50, ["none", "split_cache"])]
        try:
            for w, modes in mixes:
                self.log(f"--- mix: hot share {a.share:.0%}, writes {w:.0%}")
                # Detection, with no fix.
                set_phase(w, "none")
                t0 = t_phase = load_started if w == mixes[0][0] else time.monotonic()
                want_share = a.share * a.ops / (a.share * a.ops + a.ops * (1 - a.share) / n)
                inp, rate_r = self.model_inputs(home), a.ops
                rate_driver = float("nan")

                def detected():
                    hk = self.hot_keys(home)
                    return hk if key in hk and hk[key][2] is not None else None
                try:
                    wait_until(f"shard {home}'s hotkeyd marks {key} hot", detected, 30)
                    timings[f"detect w={w:.0%}"] = time.monotonic() - t0
                    check(True, f"detection: shard {home}'s hotkeyd marks {key} hot "
                          f"{time.monotonic() - t0:.1f}s into the mix")
                    # The estimates, once the previous phase has decayed away (5 half-lives
                    # and a rate window): the mean of five readings half a second apart.
                    # The driver's rate from a rate window (2 s) before the first reading
                    # to the last: what the daemon's projections were made from.
                    time.sleep(3)
                    # The daemon's fix follows the projections past alert.advice_margin, and
                    # its load is the shard's answers over the rate window: after a mix
                    # change the advice settles on the new one within seconds. Wait
                    # (bounded) for it to read the same three times running.
                    last = []
                    deadline = time.monotonic() + 20
                    while time.monotonic() < deadline:
                        hk = self.hot_keys(home).get(key)
                        last = (last + [hk and hk[2]])[-3:]
                        if len(last) == 3 and len(set(last)) == 1 and last[0] is not None:
                            break
                        time.sleep(1)
                    o0, r0 = self.ctl["ops"].value, time.monotonic()
                    time.sleep(2)
                    # The projection too: it scales with the decayed ops/s, which a
                    # stall of the tap's thread on a loaded machine would dip for a moment
                    # (a 0.2 s stall, by 13% at the lab's 1 s half-life), so each strategy's
                    # figure is the median of the readings.
                    reads = []
                    projections = []
                    caps = []  # the capacity each projection was made with
                    for _ in range(5):
                        reads.append(self.hot_keys(home).get(key))
                        p, c = self.daemon_projection(home, key)
                        projections.append(p)
                        caps.append(c)
                        time.sleep(0.5)
                    rate_driver = (self.ctl["ops"].value - o0) / (time.monotonic() - r0)
                    inp = self.model_inputs(home)
                    inp["capacity"] = (statistics.median(caps), inp["capacity"][1])
                    # The app's rate the daemon's projections stand for: its busiest shard
                    # with no fix is b + h = rate x (share + (1 - share) / N). Under
                    # saturation the driver's rate wanders from one second to the next, and
                    # the daemon's rate window is not the lab's.
                    if all("none" in p for p in projections):
                        rate_r = statistics.median(p["none"] for p in projections) / (
                            a.share + (1 - a.share) / inp["shards"][0])
                    ok = all(r is not None for r in reads)
                    sh = statistics.mean(r[0] for r in reads) if ok else float("nan")
                    wr = statistics.mean(r[1] for r in reads) if ok else float("nan")
                    ops = self.shard_ops(home)
                    dp = {k: statistics.median(p[k] for p in projections)
                          for k in set.intersection(*(set(p) for p in projections))}
                except TimeoutError:
                    check(False, f"detection on shard {home}: got {self.hot_keys(home)}")
                    reads, ok, dp = [], False, {}
                # What the daemon sees is the rate the shard serves: saturated, less than the
                # app asks. Its advice is the model's at that rate; the fix that resolves the
                # overload is the model's at the rate the app asks (the driver's target).
                served = lab_model(inp, rate_r, w)
                advice = advise(served, a.target)
                proj = lab_model(inp, a.ops, w)
                fix = advise(proj, a.target)
                self.log(f"shard {home}'s hotkeyd measures C {inp['capacity'][0]:.0f} ops/s, "
                         f"N {inp['shards'][0]}, A {inp['app_servers'][0]}, and projects from "
                         f"an app rate of {rate_r:.0f} of {a.ops:g} ops/s (the driver's: "
                         f"{rate_driver:.0f}); the model advises {advice} at that rate, {fix} "
                         f"at {a.ops:g} ops/s")
                if advice != fix:
                    self.log(f"  NOTE: saturation hides {1 - rate_r / a.ops:.0%} of the app's "
                             f"rate from the shard: the advice from what it serves ({advice}) "
                             f"is not the fix its demand needs ({fix})")
                if reads:
                    # In ops/s: hotkeyd's measured capacity moves from one reading to the
                    # next, and the model's ops/s do not depend on it.
                    cap = inp["capacity"][0]
                    want = {k: served[k][0] * cap for k in MODES}
                    self.log("the daemon's projected busiest shard, ops/s: " + ", ".join(
                        f"{k} {v:.0f} (model {want[k]:.0f})"
                        for k, v in sorted(dp.items())) + "; none's readings " + " ".join(
                            f"{p['none']:.0f}" for p in projections if "none" in p))
                    check(set(dp) == set(MODES) and all(
                        abs(dp[k] - want[k]) <= a.tolerance * want[k] for k in MODES),
                        f"the daemon's projected busiest shard per fix is within "
                        f"±{a.tolerance:.0%} of the model's with its measured inputs")
                    # A saturated shard serves between what it can and what is asked: the
                    # daemon's advice is the model's at the rate it serves, or, while that
                    # rate reaches for the demand, the model's at the demand (held by
                    # alert.advice_margin either way).
                    # Near the target the served rate's wander decides between two fixes,
                    # and the daemon holds the one it gave while the answer flickers back
                    # to it: any fix the model puts within the lab's tolerance of the target
                    # at the lowest rate the shard served during the reads is an answer.
                    nones = [p["none"] for p in projections if "none" in p]
                    low = lab_model(inp, min(nones) / (a.share + (1 - a.share) /
                                                       inp["shards"][0]), w) if nones else served

                    def fits(s):
                        return s in (advice, fix) or (
                            s in low and low[s][0] <= a.target * (1 + a.tolerance))
                    check(ok and abs(sh - want_share) <= 0.02 and abs(wr - w) <= 0.03 and
                          all(fits(r[2]) for r in reads),
                          f"detection on shard {home}: share {sh:.3f} (want {want_share:.3f}"
                          f"±0.02), write ratio {wr:.3f} (want {w:.2f}±0.03), advice "
                          f"{[r and r[2] for r in reads]} (model {advice} at the served rate, "
                          f"{fix} at the demand); the tap counts {ops:.0f} ops/s on the shard")
                try:
                    wait_until("the other shards' hotkeyds mark nothing hot",
                               lambda: all(not self.hot_keys(s) for s in others), 15)
                    check(True, "the other shards' hotkeyds mark nothing hot")
                except TimeoutError:
                    check(False, "other shards mark nothing hot: " +
                          str({s: self.hot_keys(s) for s in others if self.hot_keys(s)}))
                # The shipped recording rule itself, not a query rebuilt from its parts.
                expr = (f'cluster_key:hotkey_key_ops_per_cluster_ops:ratio'
                        f'{{cluster="lab",key="{key}"}}')
                try:
                    v = wait_until("the cluster-wide share from the recording rules",
                                   lambda: (lambda x: x if x is not None and
                                            abs(x - a.share) <= 0.02 else None)(
                                       self.prom_value(expr)), 20)
                    check(True, f"cluster-wide recording rule "
                          f"cluster_key:hotkey_key_ops_per_cluster_ops:ratio: {key} takes "
                          f"{v:.3f} of the cluster's ops (want {a.share}±0.02)")
                except TimeoutError:
                    check(False, f"cluster-wide share: {self.prom_value(expr)}")
                measured(w, "none")
                if proj["none"][0] > a.target:
                    try:
                        wait_until("HotkeydHotKeyCritical firing",
                                   lambda: critical()[0] == "firing", 40)
                        # An upper bound: looked at only after detection and a measurement.
                        timings[f"alert firing by w={w:.0%}"] = time.monotonic() - t_phase
                        check(critical()[1] == str(home),
                              f"HotkeydHotKeyCritical firing for {key} on shard {critical()[1]}")
                    except TimeoutError:
                        check(False, f"HotkeydHotKeyCritical firing (state {critical()})")
                for mode in modes[1:]:
                    set_phase(w, mode)
                    t_fix = time.monotonic()
                    time.sleep(a.settle_seconds)
                    loads, busiest = measured(w, mode)
                    if mode == fix:
                        try:
                            wait_until("the alert resolves", lambda: critical()[0] is None, 60)
                            timings[f"resolve w={w:.0%} {mode}"] = time.monotonic() - t_fix
                            check(True, f"advised fix {mode}: HotkeydHotKeyCritical resolved "
                                  f"{time.monotonic() - t_fix:.1f}s after applying it")
                        except TimeoutError:
                            check(False, f"advised fix {mode}: alert still {critical()}")
                    elif proj[mode][0] > a.target and mode == "cache":
                        # A wrong fix: the alert keeps firing, the key's shard stays busiest.
                        states = []
                        end = time.monotonic() + a.wrong_fix_seconds
                        while time.monotonic() < end:
                            states.append(critical()[0])
                            time.sleep(0.5)
                        check(all(s == "firing" for s in states),
                              f"wrong fix {mode}: HotkeydHotKeyCritical kept firing for "
                              f"{a.wrong_fix_seconds:g}s ({len(states)} looks)")
                        check(busiest == home,
                              f"wrong fix {mode}: the busiest shard is {busiest}, the key's "
                              f"shard {home}, as the model says")
                # The burnt shard's landing page: every fix of this mix, projected beside
                # measured, and the model holding there too. Read as the browser draws it
                # after the last mix (Chromium is heavy on two cores: once, when nothing
                # is measured after it), from /api/v1/measured, what it draws, before.
                # The feed pauses meanwhile, so the page shows the fix, not the browser.
                browser = bool(a.chromium) and w == mixes[-1][0]
                self.feed_hold.set()
                try:
                    pj = http_json(f"http://127.0.0.1:{self.web_ports[home]}/api/v1/measured")
                    # hotkeyd's capacity moves with each reading of the shard: read beside it
                    cap_now = self.model_inputs(home)["capacity"][0]
                    rows, line = self.page_table(home, browser)
                    api = self.page_table(home, False)[0] if browser else rows
                finally:
                    self.feed_hold.clear()
                if browser:
                    check(all(rows.get(m) is not None and all(
                        (x is None) == (y is None) and (x is None or abs(x - y) < 1e-9)
                        for x, y in zip(rows[m], api[m])) for m in api),
                        f"shard {home}'s landing page, drawn by headless Chromium, shows "
                        f"/api/v1/measured's figures for every fix")
                self.log(f"shard {home}'s landing page: {line}")
                if pj["projection"]:
                    self.log("  its projection: " + json.dumps(pj["projection"]))
                for mode in modes:
                    r = rows.get(mode)
                    self.log(f"  page row {mode}: " + ("missing" if r is None else
                             ", ".join("–" if x is None else f"{x:.0%}" for x in r)))
                # The page projects from the rate the shard served with no fix, and measures
                # each fix at the rate the driver achieved under it: a fix's measured load is
                # its projection scaled by the ratio of the two rates. Its loads are over the
                # capacity it divides by (a measured shard's ops/s over its load); the model
                # is compared in ops/s, since hotkeyd's measured capacity moves with load.
                m = pj["measurement"]
                cap_page = (m["ops_per_second"][0] / m["loads"][0]
                            if m and m["loads"] and m["loads"][0] > 0 else float("nan"))
                rate_p = (pj["projection"]["shard_ops"] / (a.share + (1 - a.share) /
                                                           inp["shards"][0])
                          if pj["projection"] else rate_r)  # the page's projection's
                scale = {m: self.feed_rates.get((MODES.index(m), w), rate_p) / rate_p
                         for m in modes}
                # The page divides by the capacity its projection was made with (hotkeyd's
                # measured one at that time): the measured capacity moves with the load.
                cap_proj = pj["projection"]["capacity"] if pj["projection"] else float("nan")
                self.log(f"  the page divides by capacity {cap_page:.0f} ops/s; its "
                         f"projection's {cap_proj:.0f}; hotkeyd measures {cap_now:.0f} now; "
                         "each fix's measured load over its projection should be " +
                         ", ".join(f"{m} {scale[m]:.2f}" for m in modes))
                check(abs(cap_page - cap_proj) <= 1e-6 * cap_proj,
                      f"w={w:.0%}: shard {home}'s landing page divides by the capacity its "
                      f"projection used ({cap_page:.0f} ops/s, projection's {cap_proj:.0f}; "
                      f"hotkeyd measures {cap_now:.0f} now)")
                pb = lambda m, i: (lambda r: r is not None and None not in r and (  # noqa: E731
                    abs(r[i + 1] - r[i] * scale[m]) <= a.tolerance * r[i] * scale[m]))(
                        rows.get(m))
                want = {m: served[m][0] * rate_p / rate_r * inp["capacity"][0] / cap_page
                        for m in modes}
                check(all(pb(m, 0) and pb(m, 2) for m in modes) and
                      all(abs(rows[m][0] - want[m]) <= a.tolerance * want[m]
                          for m in modes) and "STALE" not in line,
                      f"w={w:.0%}: shard {home}'s landing page shows each fix's measured "
                      f"busiest and least busy load within ±{a.tolerance:.0%} of its "
                      f"projection at the driver's rate, the projection within "
                      f"±{a.tolerance:.0%} of the model's in ops/s ({', '.join(modes)})")

        finally:
            stop.set()
            for p in workers:
                p.join(timeout=5)
                if p.is_alive():
                    p.terminate()
        self.print_table(results)
        print(f"shard {home} (the hot key's): busy fraction of its quota (INFO; hotkeyd), "
              f"driver's mean latency of its background ops (others' median), app ops/s:")
        for (w, mode), (lh, lo) in latencies.items():
            bi, bh = busies[(w, mode)]
            print(f"  w={w:.0%} {mode:11} busy {bi:4.0%}; {(bh or 0):4.0%}  latency "
                  f"{lh * 1e3:6.2f} ms ({lo * 1e3:.2f} ms)  {rates[(w, mode)]:.0f} ops/s")
        for k, v in timings.items():
            self.log(f"time: {k}: {v:.1f}s")
        return verdict(checks, shortfalls)

    # ------------------------------------------------------------ the loop, closed
    def feed_entry(self, i, key):
        """`key`'s entry in shard i's hotkeyd's feed (GET /api/v1/hotkeys), or None."""
        d = http_json(f"http://127.0.0.1:{self.web_ports[i]}/api/v1/hotkeys")
        return next((e for e in d["entries"] if e.get("key") == key), None)

    def split_parts_left(self, key):
        """The kit's sub-keys of `key` still in the cluster (SCAN of every shard)."""
        pattern = key.replace("[", "\\[").replace("*", "\\*") + "{hk:*"
        return [k for c in self.conns for k in c.scan_iter(match=pattern, count=1000)]

    def watch(self, stop, key, home, samples, every=0.25):
        """Every `every` s: (time, commands served per shard, the feed's mode for `key` on
        its shard's hotkeyd, HotkeydHotKeyCritical's state)."""
        conns = [redis.Redis(host="127.0.0.1", port=p) for p in self.ports]
        last = None
        while not stop.wait(every):
            try:
                e = self.feed_entry(home, key)
                state = self.alert_state("HotkeydHotKeyCritical", key)[0]
                samples.append((time.monotonic(), self.calls(conns), e and e["mode"], state))
                if e and e["mode"] != last:
                    # What the daemon saw when its feed changed the fix.
                    top = http_json(f"http://127.0.0.1:{self.web_ports[home]}/api/v1/top")
                    k = next((k for k in top["keys"] if k["key"] == key), {})
                    self.log(f"  feed: {key} {e['mode']} (share {e['share']:.2f}, writes "
                             f"{e['write_ratio']:.2f}); the daemon: shard "
                             f"{json.dumps(top.get('ops_per_second'))} ops/s, capacity "
                             f"{top['model']['capacity']['value']:.0f}, projected "
                             + json.dumps({s: round(v, 2) for s, v in
                                           (k.get("projected_load") or {}).items()}))
                last = e and e["mode"]
            except Exception:  # noqa: BLE001 - the shards are stopping
                return

    def run_loop(self):
        """The loop closed with no human action: for each mix, the key turns hot; its
        shard's hotkeyd detects it through the tap, advises a fix and pushes it on its feed;
        the app workers' kits apply it; the busiest shard falls back under the target and
        the critical alert resolves. Then the key cools, the feed withdraws the fix and the
        kits fold split counters back."""
        a = self.a
        n = self.n
        key = a.key
        home = shard_of(key, n)
        self.log(f"hot key {key!r}: slot {key_slot(key.encode())}, shard {home}; the app "
                 "workers reach it through hotkeyd_client, following all "
                 f"{n} hotkeyds' feeds")
        self.conns[home].set(key, b"0")
        plan = dict(key=key, replicas=[], subkeys=[], ttl=a.ttl, pools=self.pools,
                    share=0.0, rate_per_worker=a.ops / a.app_servers,
                    feeds=[f"http://127.0.0.1:{wp}" for wp in self.web_ports])
        self.ctl = self.new_ctl()
        self.ctl["share"].value = 0.0
        out = mp.Queue()
        stop = mp.Event()
        workers = [mp.Process(target=app_worker,
                              args=(w, self.ports, plan, self.ctl, stop, 2, out), daemon=True)
                   for w in range(a.app_servers)]
        for w in workers:
            w.start()
        samples = []
        watcher = threading.Thread(target=self.watch, args=(stop, key, home, samples),
                                   daemon=True)
        watcher.start()
        checks, rows, shortfalls, windows = [], [], [], []

        def check(ok, what):
            checks.append((bool(ok), what))
            self.log(("PASS " if ok else "FAIL ") + what)

        def critical():
            return self.alert_state("HotkeydHotKeyCritical", key)[0]

        def lasting(what, fn, timeout):
            try:
                return wait_until(what, fn, timeout)
            except TimeoutError:
                check(False, what)
                return None

        time.sleep(3)  # the kits connect to the feeds
        stats = {}
        try:
            for w in (0.05, 0.95, 0.50):
                self.log(f"--- mix: hot share {a.share:.0%}, writes {w:.0%}, no human action")
                self.ctl["write"].value = w
                row = {"w": w}
                rows.append(row)
                if lasting("quiet: no feed entry, no hot key, no critical alert",
                           lambda: self.feed_entry(home, key) is None and
                           not self.hot_keys(home) and critical() is None, 60) is None:
                    continue
                t_on = time.monotonic()
                self.ctl["share"].value = a.share
                e = lasting("the feed names the key", lambda: self.feed_entry(home, key), 30)
                if e is None:
                    continue
                row["feed"] = time.monotonic() - t_on
                # Relief, read afterwards from the samples: see below.
                time.sleep(4 + a.settle_seconds)
                ops, busy, _, app_rate = self.measure(a.measure_seconds)
                e = self.feed_entry(home, key)
                if e is None:
                    check(False, f"w={w:.0%}: the feed still names the key while it is hot")
                    continue
                row["mode"] = mode = e["mode"]
                inp = self.model_inputs(home)
                cap = inp["capacity"][0]
                loads = [x / cap for x in ops]
                pb, pl = project(int(inp["shards"][0]), cap, app_rate, a.share, w,
                                 int(inp["app_servers"][0]), a.ttl, a.replicas,
                                 a.split)[mode]
                mb, ml = max(loads), min(loads)
                row.update(app=app_rate, cap=cap, busiest=mb, least=ml, pb=pb, pl=pl,
                           busy=busy[home])
                seq = [m for t, _, m, _ in samples[:] if t >= t_on and m]
                row["modes"] = [m for i, m in enumerate(seq) if i == 0 or seq[i - 1] != m]
                self.log(f"w={w:.0%}: the feed named the key {row['feed']:.1f} s after "
                         f"onset, with {' then '.join(row['modes'])}; then app {app_rate:.0f} ops/s; shards " +
                         " ".join(f"{x:.0%}" for x in loads) + f" of shard {home}'s measured "
                         f"capacity {cap:.0f} ops/s; busiest {mb:.0%} (model {pb:.0%}), least "
                         f"busy {ml:.0%} (model {pl:.0%})")
                check(abs(mb - pb) <= a.tolerance * pb and abs(ml - pl) <= a.tolerance * pl,
                      f"w={w:.0%} {mode} applied by the kits: busiest and least busy within "
                      f"±{a.tolerance:.0%} of the model at the driver's {app_rate:.0f} ops/s "
                      f"with shard {home}'s measured inputs")
                check(mb <= a.target * (1 + a.tolerance),
                      f"w={w:.0%}: the busiest shard is back under the target "
                      f"({mb:.0%} of capacity, target {a.target:.0%})")
                if app_rate < 0.9 * a.ops and max(busy) < 0.9:
                    shortfalls.append(f"w={w:.0%}: the driver kept {app_rate:.0f} of "
                                      f"{a.ops:g} ops/s with no shard saturated")
                if lasting("HotkeydHotKeyCritical resolves", lambda: critical() is None,
                           60) is not None:
                    row["resolved"] = time.monotonic() - t_on
                t_off = time.monotonic()
                windows.append((w, t_on, t_off, cap))
                # The key cools: the feed withdraws the fix, the kits fold split counters.
                self.ctl["share"].value = 0.0
                gone = lasting("the feed withdraws the key",
                               lambda: self.feed_entry(home, key) is None, 30)
                if gone is not None:
                    row["withdrawn"] = time.monotonic() - t_off
                ledger = self.ctl["ledger"]
                folded = lasting("the kits fold the sub-keys back: none left, the key equals "
                                 "the driver's ledger",
                                 lambda: not self.split_parts_left(key) and int(
                                     self.conns[home].get(key) or 0) == ledger.value, 30)
                total = int(self.conns[home].get(key) or 0)
                row["ledger"] = (total, ledger.value)
                check(folded is not None and total == ledger.value,
                      f"w={w:.0%}: the counter holds {total}, the driver's ledger "
                      f"{ledger.value} acknowledged INCRs; sub-keys left: "
                      f"{len(self.split_parts_left(key))}")
        finally:
            stop.set()
            results = {}
            deadline = time.monotonic() + 30
            while len(results) < len(workers) and time.monotonic() < deadline:
                try:
                    wid, r = out.get(timeout=1)
                    results[wid] = r
                except Exception:  # noqa: BLE001 - queue.Empty: a worker is slow
                    pass
            for p in workers:
                p.join(timeout=5)
                if p.is_alive():
                    p.terminate()
            watcher.join(5)
        check(len(results) == len(workers),
              f"every app worker returned its records ({len(results)} of {len(workers)})")
        for r in results.values():
            for k, v in r["stats"].items():
                stats[k] = stats.get(k, 0) + v
        self.log("the kits' counters, all workers: " +
                 ", ".join(f"{k} {v}" for k, v in sorted(stats.items()) if v))
        self.loop_relief(rows, windows, samples, a.target)
        for r in rows:
            if "peak" not in r:
                continue
            if not r["overloaded"]:
                check(True, f"w={r['w']:.0%}: no shard went over the target after onset "
                      f"(busiest {r['peak']:.0%} of capacity at most): the fix came first")
            else:
                check(r.get("relief") is not None,
                      f"w={r['w']:.0%}: a shard went over the target after onset (busiest "
                      f"{r['peak']:.0%} of capacity at most), and every shard was back under "
                      "it " + (f"{r['relief']:.1f} s after onset" if r.get("relief")
                               else "never"))
        self.loop_staleness(rows, windows, results, check)
        self.print_loop(rows)
        return verdict(checks, shortfalls)

    def loop_relief(self, rows, windows, samples, target):
        """Onset to relief: the end of the first 1 s window after an overloaded one in which
        every shard served at most target x capacity (the capacity the burnt shard's hotkeyd
        measured after the fix); and when the critical alert was first firing."""
        for w, t_on, t_off, cap in windows:
            row = next(r for r in rows if r["w"] == w)
            ss = [s for s in samples if t_on - 1 <= s[0] <= t_off]
            over = False
            peak = 0.0
            for i, (t, calls, _, _) in enumerate(ss):
                j = max((k for k in range(i) if t - ss[k][0] >= 1.0), default=None)
                if j is None or t < t_on + 1.0:
                    continue
                busiest = max((c - c0) for c, c0 in zip(calls, ss[j][1])) / (t - ss[j][0])
                peak = max(peak, busiest / cap)
                if busiest > target * cap:
                    over = True
                elif over and "relief" not in row:
                    row["relief"] = t - t_on
            row["overloaded"] = over
            row["peak"] = peak
            firing = [s[0] for s in ss if s[3] == "firing" and s[0] >= t_on]
            row["fired"] = firing[0] - t_on if firing else None

    def loop_staleness(self, rows, windows, results, check):
        """What readers saw. The counter only grows, by 1 per INCR. A read that started at
        t and returned v returned a value the cluster stopped holding when its (v+1)-th
        INCR was applied: after the (v+1)-th earliest send of an INCR, and before the
        (v+1)-th earliest reply. So its staleness is at least t - that reply and at most t
        - that send (0 when the value was current). The kit promises at most the refresh
        interval: the lower bound never above it."""
        sends = sorted(s for r in results.values() for s, _ in r["writes"])
        replies = sorted(e for r in results.values() for _, e in r["writes"])
        reads = [x for r in results.values() for x in r["reads"]]
        for w, t_on, t_off, _ in windows:
            row = next(r for r in rows if r["w"] == w)
            lo, hi = [], []
            for t, v in reads:
                if t_on <= t <= t_off:
                    lo.append(max(0.0, t - replies[v]) if v < len(replies) else 0.0)
                    hi.append(max(0.0, t - sends[v]) if v < len(sends) else 0.0)
            if not lo:
                continue
            row["stale"] = (len(lo), statistics.median(hi), max(hi), max(lo))
            check(max(lo) <= self.a.ttl + 1e-3,
                  f"w={w:.0%}: {len(lo)} reads through the kit; staleness median "
                  f"{statistics.median(hi) * 1e3:.0f} ms, max {max(hi) * 1e3:.0f} ms (at "
                  f"least {max(lo) * 1e3:.0f} ms), refresh interval {self.a.ttl:g} s")

    def print_loop(self, rows):
        def f(x, fmt):
            return "–" if x is None else format(x, fmt)
        print("\nthe loop closed by itself (times from onset, s; loads in % of the burnt "
              "shard's measured capacity):")
        print("| writes | fix pushed | pushed at | peak busiest | relief at | alert fired at | "
              "alert "
              "resolved at | busiest: model -> measured | staleness median / max | "
              "counter = ledger |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            st = r.get("stale")
            led = r.get("ledger")
            relief = f(r.get("relief"), ".1f") if r.get("overloaded", True) else "never over"
            print(f"| {r['w']:.0%} | {' → '.join(r.get('modes', [])) or '–'} | "
                  f"{f(r.get('feed'), '.1f')} | {f(r.get('peak'), '.0%')} | "
                  f"{relief} | {f(r.get('fired'), '.1f')} | "
                  f"{f(r.get('resolved'), '.1f')} | "
                  + (f"{r['pb']:.0%} -> {r['busiest']:.0%}" if "pb" in r else "–") + " | "
                  + (f"{st[1] * 1e3:.0f} / {st[2] * 1e3:.0f} ms" if st else "–") + " | "
                  + (f"{led[0]} = {led[1]}" if led else "–") + " |")
        print()

    def print_table(self, results):
        cols = ["none", "cache", "replicate", "split", "split_cache"]
        heads = ["none", "cache", "replicate", "split", "split+cache"]
        for title, idx in (("busiest shard", 0), ("least busy shard", 1)):
            print(f"\n{title}, projected -> measured at the driver's rate (% of the burnt "
                  f"shard's measured capacity):")
            print("| hot share | writes | " + " | ".join(heads) + " |")
            print("|---|---|" + "---|" * len(cols))
            for w in (0.05, 0.95, 0.50):
                cells = []
                for c in cols:
                    r = results.get((w, c))
                    cells.append("" if r is None else f"{r[idx]:.0%} -> {r[idx + 2]:.0%}")
                print(f"| {self.a.share:.0%} | {w:.0%} | " + " | ".join(cells) + " |")
        print()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hotkeyd", default=os.path.join(ROOT, "build/daemon/hotkeyd"))
    p.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    p.add_argument("--redis-cli", default=shutil.which("redis-cli") or "redis-cli")
    p.add_argument("--prometheus", default=shutil.which("prometheus") or "prometheus")
    p.add_argument("--promtool", default=shutil.which("promtool") or "promtool")
    p.add_argument("--chromium", default=shutil.which("chromium") or "",
                   help="headless Chromium, to read the landing page as a browser draws it "
                   "(empty: read /api/v1/measured, what the page draws, instead)")
    p.add_argument("--shards", type=int, default=8, help="N")
    p.add_argument("--capacity", type=float, default=1000,
                   help="C, ops/s per shard: each shard's CPU quota is calibrated to it")
    p.add_argument("--calibrate-seconds", type=float, default=3)
    p.add_argument("--ops", type=float, default=None,
                   help="T, app ops/s in total (default 5000; with --loop 4000, so that each "
                   "fix leaves a margin under the target however the shard's measured capacity "
                   "moves with the machine's load)")
    p.add_argument("--share", type=float, default=0.30, help="the hot key's share h of T")
    p.add_argument("--app-servers", type=int, default=8,
                   help="app worker processes (hotkeyd sees one client host on loopback)")
    p.add_argument("--ttl", type=float, default=1.0, help="cache TTL = refresh interval, s")
    p.add_argument("--replicas", type=int, default=4, help="R")
    p.add_argument("--split", type=int, default=8, help="S")
    p.add_argument("--target", type=float, default=0.8, help="--cluster.target")
    p.add_argument("--key", default="user:42")
    p.add_argument("--measure-seconds", type=float, default=5)
    p.add_argument("--settle-seconds", type=float, default=2)
    p.add_argument("--wrong-fix-seconds", type=float, default=10)
    p.add_argument("--alert-for", default="3s", help="the rules' for: and keep_firing_for:")
    p.add_argument("--avg-window", default="5s", help="the page's avg_over_time window")
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--quick", action="store_true",
                   help="the short version: no replicate phase for the 95%% mix")
    p.add_argument("--check", action="store_true", help="exit 1 unless every check passes")
    p.add_argument("--loop", action="store_true",
                   help="instead of switching fixes by hand, let hotkeyd's feed and the "
                   "client kit (clients/python) close the loop for each mix")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument("--defaults", action="store_true",
                   help="the hotkeyds at the shipped time scale (no --shard.interval, "
                   "--track.half-life, --track.rate-window or alert.min_dwell), to measure "
                   "onset to relief as users get it; feed.hold stays 2 s")
    a = p.parse_args()
    a.ops = a.ops or (4000 if a.loop else 5000)
    a.hotkeyd = os.path.abspath(a.hotkeyd)  # the daemons run in the lab's directory
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))  # run the cleanup below
    lab = Lab(a)
    ok = False
    skipped = False
    t0 = time.monotonic()
    try:
        lab.start()
        ok = lab.run_loop() if a.loop else lab.run()
    except KeyboardInterrupt:
        pass
    except Skip as e:
        print(f"SKIP: {e}", flush=True)
        skipped = True
    finally:
        lab.stop()
        print(f"[lab] ran {time.monotonic() - t0:.0f} s", flush=True)
    sys.exit(77 if skipped else 0 if ok or not a.check else 1)


if __name__ == "__main__":
    main()
