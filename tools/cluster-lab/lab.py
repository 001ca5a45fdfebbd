#!/usr/bin/python3
"""The cluster lab: the shard load model against real Redis shards and real client code.

One command starts, on loopback only:
  * N standalone redis-server shards (default 8). Slots are assigned by the client, as a
    Redis Cluster client would: CRC16 (XMODEM) of the key, or of its {hash tag}, mod 16384,
    and shard i owns the contiguous slot range [i*16384/N, (i+1)*16384/N). Standalone
    servers rather than a Redis Cluster: no cluster bus, no MOVED/ASK redirections and no
    slot migration, so the lab is simpler, starts in a second and is deterministic on
    loopback, while every key still lands where a cluster would put it;
  * one hotkeyd per shard, tapping that shard's port (--tap.interface=lo), with the lab's
    cluster figures (--cluster.shards, capacity, app-servers, refresh, replicas, split);
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

Load is measured from Redis itself: the deltas of INFO commandstats calls per second on
each shard (the lab's own INFO calls excluded), over capacity C. The model's projection
comes from hotkey::model's formulas (shard_model.h), recomputed here for the lab's figures;
the advice each mix gets from them must be the one the burnt shard's hotkeyd exports.

Usage: tools/cluster-lab/lab.py --hotkeyd build/daemon/hotkeyd [--quick] [--check]
  --check exits 1 unless detection, the model-vs-measured table, the alert loop and the
  landing page's table all hold (what tests/lab/cluster_lab_test.sh runs). Needs root (CAP_NET_RAW) for the tap,
  redis-server, prometheus and promtool, and Debian's python3-redis.
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


def shard_of(key, n):
    if isinstance(key, str):
        key = key.encode()
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


def app_worker(wid, ports, plan, ctl, stop, threads_per_worker):
    """One app server: `threads_per_worker` request threads sharing one HotKeyClient.
    Each thread paces its share of the worker's ops on a fixed schedule; the op sequence
    is deterministic (error diffusion), so the hot share and write ratio are exact."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    client = HotKeyClient(len(ports), plan["key"], plan["replicas"], plan["subkeys"],
                          plan["ttl"])
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
            hot_acc += plan["share"]
            if hot_acc >= 1.0:
                hot_acc -= 1.0
                w_acc += ctl["write"].value
                if w_acc >= 1.0:
                    w_acc -= 1.0
                    client.write(conns, rng, mode, b"v%d" % done)
                else:
                    client.read(conns, rng, mode)
            else:
                k = rng.choice(pools[shard])
                if rng.random() < 0.1:
                    call(conns[shard], "SET", k, b"x")
                else:
                    call(conns[shard], "GET", k)
                shard = (shard + 1) % n
            done += 1
            with ctl["ops"].get_lock():
                ctl["ops"].value += 1

    ts = [threading.Thread(target=run, args=(t,), daemon=True) for t in range(threads_per_worker)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


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
            port = free_port()
            d = os.path.join(self.tmp, f"redis{i}")
            os.mkdir(d)
            self.spawn(f"redis{i}", [a.redis_server, "--port", str(port), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no", "--dir", d,
                                     "--protected-mode", "no"])
            self.ports.append(port)
        self.conns = [redis.Redis(host="127.0.0.1", port=p) for p in self.ports]
        for i, c in enumerate(self.conns):
            wait_until(f"redis shard {i}", c.ping, 10)
        # The daemons' policy: a key is hot as soon as it crosses its threshold.
        rules_path = os.path.join(self.tmp, "hotkeyd-rules.yml")
        with open(rules_path, "w") as f:
            f.write("alert:\n  min_dwell: 0s\n")
        for i, port in enumerate(self.ports):
            wp = free_port()
            self.web_ports.append(wp)
            self.spawn(f"hotkeyd{i}", [
                a.hotkeyd, f"--web.listen-address=127.0.0.1:{wp}",
                "--udp.listen-address=127.0.0.1:0",
                "--tap.interface=lo", f"--tap.port={port}", "--tap.protocol=redis",
                "--tap.snaplen=4096", "--tap.buffer-bytes=4MiB",
                f"--cluster.shards={self.n}", f"--cluster.capacity={a.capacity:g}",
                f"--cluster.app-servers={a.app_servers}", f"--cluster.refresh={a.ttl:g}s",
                f"--cluster.replicas={a.replicas}", f"--cluster.split={a.split}",
                f"--cluster.target={a.target:g}",
                "--track.half-life=1s", "--track.rate-window=2s", f"--config.file={rules_path}",
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

    def stop(self):
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
        """Commands served per shard, from INFO commandstats (the lab's INFO excluded)."""
        out = []
        for c in conns or self.conns:
            st = c.info("commandstats")
            out.append(sum(v["calls"] for k, v in st.items() if k not in ("cmdstat_info",)))
        return out

    def measure(self, seconds):
        c0, t0, o0 = self.calls(), time.monotonic(), self.ctl["ops"].value
        time.sleep(seconds)
        c1, t1, o1 = self.calls(), time.monotonic(), self.ctl["ops"].value
        dt = t1 - t0
        loads = [(b - a) / dt / self.a.capacity for a, b in zip(c0, c1)]
        return loads, (o1 - o0) / dt

    def feed_measured_loads(self, stop, key, window=4.0):
        """Every half second, writes each shard's ops/s over the last `window` seconds
        (INFO commandstats deltas) to the hotkeyds' --model.measured-loads-file, with the
        fix in force, atomically (a temporary file renamed over it). A window in which the
        fix or the mix changed is not written: it measured neither."""
        conns = [redis.Redis(host="127.0.0.1", port=p) for p in self.ports]
        hist = []  # (monotonic time, wall time, calls per shard, phase)
        tmp = self.loads_file + ".tmp"
        while not stop.wait(0.5):
            if self.feed_hold.is_set():
                hist.clear()
                continue
            try:
                phase = (self.ctl["mode"].value, self.ctl["write"].value)
                c, t, wall = self.calls(conns), time.monotonic(), time.time()
                if phase != (self.ctl["mode"].value, self.ctl["write"].value):
                    hist.clear()
                    continue
            except Exception:  # noqa: BLE001 - the shards are stopping
                return
            if hist and hist[-1][3] != phase:
                hist.clear()
            hist.append((t, wall, c, phase))
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
        """{strategy: busiest load} that shard i's hotkeyd projects for `key`."""
        text = http_text(f"http://127.0.0.1:{self.web_ports[i]}/metrics")
        out = {}
        for labels, v in re.findall(r'^hotkey_key_projected_load_ratio\{(.*)\} (\S+)$',
                                    text, re.M):
            d = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
            if d.get("key") == key:
                out[d.get("strategy")] = float(v)
        return out

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
        # Background: 64 keys per shard, found by their slots; every op goes to the next shard.
        pools = [[] for _ in range(n)]
        i = 0
        while min(len(p) for p in pools) < 64:
            k = f"bg:{i}"
            s = shard_of(k, n)
            if len(pools[s]) < 64:
                pools[s].append(k)
            i += 1
        for k in replicas + subkeys + [key]:
            self.conns[shard_of(k, n)].set(k, b"0")
        plan = dict(key=key, replicas=replicas, subkeys=subkeys, ttl=a.ttl, pools=pools,
                    share=a.share, rate_per_worker=a.ops / a.app_servers)
        self.ctl = dict(mode=mp.Value("i", 0), write=mp.Value("d", 0.05), ops=mp.Value("q", 0))
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

        def measured(w, mode, proj):
            loads, app_rate = self.measure(a.measure_seconds)
            busiest = max(range(n), key=lambda s: loads[s])
            pb, pl = proj[mode]
            mb, ml = max(loads), min(loads)
            results[(w, mode)] = (pb, pl, mb, ml)
            self.log(f"w={w:.0%} {mode}: app {app_rate:.0f} ops/s; shards " +
                     " ".join(f"{x:.0%}" for x in loads) +
                     f"; busiest shard {busiest} {mb:.0%} (model {pb:.0%}), least busy "
                     f"{ml:.0%} (model {pl:.0%})")
            # Shard loads are linear in the app's rate: on a loaded machine the driver may
            # fall a little short, so the model is taken at the rate it kept.
            scale = app_rate / a.ops
            eb, el = pb * scale, pl * scale
            check(abs(mb - eb) <= a.tolerance * eb and abs(ml - el) <= a.tolerance * el,
                  f"w={w:.0%} {mode}: busiest and least busy within ±{a.tolerance:.0%} of "
                  f"the model at the driver's {app_rate:.0f} ops/s ({eb:.0%}, {el:.0%})")
            check(abs(app_rate - a.ops) <= 0.10 * a.ops,
                  f"w={w:.0%} {mode}: the driver kept within 10% of its {a.ops:g} ops/s "
                  f"({app_rate:.0f})")
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
                proj = project(n, a.capacity, a.ops, a.share, w, a.app_servers, a.ttl,
                               a.replicas, a.split)
                advice = advise(proj, a.target)
                self.log(f"--- mix: hot share {a.share:.0%}, writes {w:.0%}; model advises "
                         f"{advice}")
                # Detection, with no fix.
                set_phase(w, "none")
                t0 = t_phase = load_started if w == mixes[0][0] else time.monotonic()
                want_share = a.share * a.ops / (a.share * a.ops + a.ops * (1 - a.share) / n)

                def detected():
                    hk = self.hot_keys(home)
                    return hk if key in hk and hk[key][2] == advice else None
                try:
                    wait_until(f"shard {home}'s hotkeyd marks {key} hot", detected, 30)
                    timings[f"detect w={w:.0%}"] = time.monotonic() - t0
                    check(True, f"detection: shard {home}'s hotkeyd marks {key} hot "
                          f"{time.monotonic() - t0:.1f}s into the mix, advising {advice}")
                    # The estimates, once the previous phase has decayed away (5 half-lives
                    # and a rate window): the mean of five readings half a second apart.
                    time.sleep(5)
                    # The projection too: it scales with the decayed ops/s, which a
                    # stall of the tap's thread on a loaded machine would dip for a moment
                    # (a 0.2 s stall, by 13% at the lab's 1 s half-life), so each strategy's
                    # figure is the median of the readings.
                    reads = []
                    projections = []
                    for _ in range(5):
                        reads.append(self.hot_keys(home).get(key))
                        projections.append(self.daemon_projection(home, key))
                        time.sleep(0.5)
                    ok = all(r is not None for r in reads)
                    sh = statistics.mean(r[0] for r in reads) if ok else float("nan")
                    wr = statistics.mean(r[1] for r in reads) if ok else float("nan")
                    ops = self.shard_ops(home)
                    dp = {k: statistics.median(p[k] for p in projections)
                          for k in set.intersection(*(set(p) for p in projections))}
                    self.log("the daemon's projection from what it measures: " + ", ".join(
                        f"{k} {v:.0%} (model {proj[k][0]:.0%})" for k, v in sorted(dp.items())) +
                        "; none's readings " + " ".join(
                            f"{p['none']:.0%}" for p in projections if "none" in p))
                    check(set(dp) == set(MODES) and all(
                        abs(dp[k] - proj[k][0]) <= a.tolerance * proj[k][0] for k in MODES),
                        f"the daemon's projected busiest shard per fix is within "
                        f"±{a.tolerance:.0%} of the model's for the lab's figures")
                    check(ok and abs(sh - want_share) <= 0.02 and abs(wr - w) <= 0.03 and
                          all(r[2] == advice for r in reads),
                          f"detection on shard {home}: share {sh:.3f} (want {want_share:.3f}"
                          f"±0.02), write ratio {wr:.3f} (want {w:.2f}±0.03), advice "
                          f"{[r and r[2] for r in reads]} (model {advice}); the tap counts "
                          f"{ops:.0f} ops/s on the shard")
                except TimeoutError:
                    check(False, f"detection on shard {home}: got {self.hot_keys(home)}")
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
                measured(w, "none", proj)
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
                    loads, busiest = measured(w, mode, proj)
                    if mode == advice:
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
                pb = lambda r, i: r is not None and None not in r and (  # noqa: E731
                    abs(r[i + 1] - r[i]) <= a.tolerance * r[i])
                check(all(pb(rows.get(m), 0) and pb(rows.get(m), 2) for m in modes) and
                      all(abs(rows[m][0] - proj[m][0]) <= a.tolerance * proj[m][0]
                          for m in modes) and "STALE" not in line,
                      f"w={w:.0%}: shard {home}'s landing page shows each fix's measured "
                      f"busiest and least busy load within ±{a.tolerance:.0%} of its "
                      f"projection, the projection within ±{a.tolerance:.0%} of the model's "
                      f"({', '.join(modes)})")

        finally:
            stop.set()
            for p in workers:
                p.join(timeout=5)
                if p.is_alive():
                    p.terminate()
        self.print_table(results)
        for k, v in timings.items():
            self.log(f"time: {k}: {v:.1f}s")
        failed = [w for ok, w in checks if not ok]
        print(f"{len(checks) - len(failed)} passed, {len(failed)} failed")
        return not failed

    def print_table(self, results):
        cols = ["none", "cache", "replicate", "split", "split_cache"]
        heads = ["none", "cache", "replicate", "split", "split+cache"]
        for title, idx in (("busiest shard", 0), ("least busy shard", 1)):
            print(f"\n{title}, projected -> measured (% of {self.a.capacity:g} ops/s):")
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
    p.add_argument("--prometheus", default=shutil.which("prometheus") or "prometheus")
    p.add_argument("--promtool", default=shutil.which("promtool") or "promtool")
    p.add_argument("--chromium", default=shutil.which("chromium") or "",
                   help="headless Chromium, to read the landing page as a browser draws it "
                   "(empty: read /api/v1/measured, what the page draws, instead)")
    p.add_argument("--shards", type=int, default=8, help="N")
    p.add_argument("--capacity", type=float, default=1000, help="C, ops/s per shard")
    p.add_argument("--ops", type=float, default=5000, help="T, app ops/s in total")
    p.add_argument("--share", type=float, default=0.30, help="the hot key's share h of T")
    p.add_argument("--app-servers", type=int, default=8, help="A, app worker processes")
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
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))  # run the cleanup below
    lab = Lab(a)
    ok = False
    try:
        lab.start()
        ok = lab.run()
    except KeyboardInterrupt:
        pass
    finally:
        lab.stop()
    sys.exit(0 if ok or not a.check else 1)


if __name__ == "__main__":
    main()
