#!/usr/bin/env python3
"""The loop stays closed (issue 33, part 3): the Python kit applying `cache` on a real
redis-server kept about 90% busy by a CPU quota, hotkeyd beside it with the shipped defaults
(a tap on loopback, nothing else set), for about ten minutes.

  warm      background GETs (pipelined) and `warm:42` (GETs, 5% INCRs, plain calls: the
            load `user:42` will bring, on a key the kit never sees), about 30% of the shard's
            ops; no quota
  quota     a CPU quota under which the shard is ~90% busy, set from the CPU the load used,
            then again from the busy fraction read under it (an op costs less under a
            quota); `warm:42` stops for 15 s, the shard runs at about 60%
  onset     `user:42` starts, through the kit: hotkeyd advises `cache`, the feed pushes it,
            the kit applies it and reports the reads it serves from its copy (POST
            /api/v1/hotkeys/demand); relief (the fix in force at the kit, the shard under the
            0.8 target by its own INFO) must come within 10 s of the onset. The onset's
            load must need a fix: when the shard is under the target by less than the
            advice's margin over the onset's first 4 s (a neighbour moved what an op costs,
            or starved the drivers), the key stops, leaves the kit, the quota is sized again
            and the onset starts over; after three such tries the test skips (77)
  demand    the demand lasts: the fix must stay in force at the kit with no gap, though
            the shard no longer sees the key's reads
  stop      `user:42`'s demand stops: the entry must leave the kit within feed.hold (60 s)
            plus the seconds the key takes to cool

Every 500 ms the test records the fix in force at the kit, the shard's busy fraction (its own
INFO since the last sample, and hotkeyd's over its window) and the key's absorbed ops/s and
hot state (/api/v1/top), and prints the timeline as JSON on stdout (the closing note's).
Fails when relief comes more than 10 s after onset, when the fix has a gap while the demand
lasts, when it is not withdrawn in time (without demand reports the kit's fix switches
itself off: the issue), or when the key's last episode (its end line, /api/v1/episodes) does
not name the fix in force.

--report-from-test sends the demand reports from the test (the kit's cache hits, once a
second, as docs/feed.md specifies) for a kit that does not send them yet.

Needs root (the tap, the cgroup), redis-server, the cgroup cpu controller and redis-py;
exits 77 without them.

usage: loop_closed_e2e.py HOTKEYD [--report-from-test]
"""

import argparse
import base64
import json
import multiprocessing
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "cluster-lab"))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))

HOT = "user:42"
WARM = "warm:42"     # the quota's calibration load, sent past the kit
HOLD = 60.0          # feed.hold's default
COOL_MARGIN = 15.0   # the key cools within seconds of its last report, and the feed's
                     # remove reaches the kit at the next tick
QUIET = 15.0         # from the calibration to the onset: its key cools, the prober's
                     # window restarts at the last change of CPUs and is whole again
TARGET = 0.8         # --model.target-load's default: relief is the shard under it
ONSET_TO_RELIEF = 10.0  # the bound, with the shipped defaults
MARGIN = 0.05        # alert.advice_margin's default
PREMISE_SECONDS = 4.0  # the onset's load is read over this, before any fix is due
PREMISE_TRIES = 3
DEMAND_SECONDS = 480.0  # from the onset to the demand's end
T0 = time.monotonic()
SPAWN = multiprocessing.get_context("spawn")  # a fresh interpreter: no lock held by a thread


def log(msg):
    print(f"[{time.monotonic() - T0:7.2f}] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def resp(*args):
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        b = a.encode() if isinstance(a, str) else a
        out.append(f"${len(b)}\r\n".encode() + b + b"\r\n")
    return b"".join(out)


def get_json(url):
    with urllib.request.urlopen(url, timeout=2) as r:
        return json.load(r)


class Background(SPAWN.Process):
    """Pipelined GETs over 10,000 keys at `ops` per second, on a raw socket, in a process of
    its own: in the test's, the kit's thread would hold the interpreter's lock while this
    one waits for it after every reply, and its rate would fall with what the kit costs."""

    def __init__(self, port, ops, pipeline=50):
        super().__init__(daemon=True)
        self.port, self.ops, self.pipeline = port, ops, pipeline
        self.stop = SPAWN.Event()
        self.sent = SPAWN.Value("q", 0, lock=False)  # GETs answered

    def run(self):
        sock = socket.create_connection(("127.0.0.1", self.port))
        rnd = random.Random(7)
        gets = [resp("GET", f"bg:{i}") for i in range(10000)]
        interval = self.pipeline / self.ops
        next_t = time.monotonic()
        while not self.stop.is_set():
            sock.sendall(b"".join(gets[rnd.randrange(10000)] for _ in range(self.pipeline)))
            # The bg: keys are never set: every reply is "$-1\r\n".
            buf = b""
            while buf.count(b"$-1\r\n") < self.pipeline:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    return
                buf += chunk
            self.sent.value += self.pipeline
            next_t += interval
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -1:
                next_t = time.monotonic()
        sock.close()


class Hot(threading.Thread):
    """`key` through `kit` (the kit, or a plain client) at `ops` per second (5% INCRs), while
    `on` is set."""

    def __init__(self, kit, ops, key=HOT):
        super().__init__(daemon=True)
        self.kit, self.ops, self.key = kit, ops, key
        self.on = threading.Event()
        self.stop = threading.Event()
        self.calls = 0
        self.errors = 0

    def run(self):
        rnd = random.Random(42)
        batch = 10
        interval = batch / self.ops
        next_t = time.monotonic()
        while not self.stop.is_set():
            if not self.on.is_set():
                time.sleep(0.05)
                next_t = time.monotonic()
                continue
            for _ in range(batch):
                try:
                    if rnd.random() < 0.05:
                        self.kit.incr(self.key)
                    else:
                        self.kit.get(self.key)
                    self.calls += 1
                except Exception:  # noqa: BLE001: counted; a saturated shard may time out
                    self.errors += 1
            next_t += interval
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -1:
                next_t = time.monotonic()


class TestSender(threading.Thread):
    """--report-from-test: the kit's cache hits since the last report, once a second, as
    docs/feed.md's demand report (the kit's own sender does this)."""

    def __init__(self, kit, web):
        super().__init__(daemon=True)
        self.kit, self.web = kit, web
        self.stop = threading.Event()
        self.sent = 0

    def run(self):
        last_hits, last_t = self.kit.stats()["cache_hits"], time.monotonic()
        key_b64 = base64.b64encode(HOT.encode()).decode()
        while not self.stop.wait(1.0):
            hits, t = self.kit.stats()["cache_hits"], time.monotonic()
            reads = hits - last_hits
            if reads <= 0:
                last_t = t
                continue
            body = json.dumps({"interval_seconds": round(t - last_t, 3),
                               "keys": [{"key_b64": key_b64, "reads": reads, "writes": 0}]})
            req = urllib.request.Request(self.web + "/api/v1/hotkeys/demand", data=body.encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=2).close()
                self.sent += 1
                last_hits, last_t = hits, t
            except (OSError, urllib.error.HTTPError):
                pass  # the counts go with the next report


def fix_in_force(kit):
    for e in kit.entries():
        key = e.key.decode() if isinstance(e.key, bytes) else e.key
        if key == HOT and not e.prefix:
            return e.mode
    return None


def metric(web, name):
    with urllib.request.urlopen(web + "/metrics", timeout=2) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name):
            total += float(line.rsplit(" ", 1)[1])
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hotkeyd")
    ap.add_argument("--bg-ops", type=float, default=6000)
    ap.add_argument("--hot-ops", type=float, default=2500)
    ap.add_argument("--busy", type=float, default=0.9,
                    help="the shard's busy fraction with no fix, under the quota")
    ap.add_argument("--report-from-test", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (the tap, the cgroup)", file=sys.stderr)
        return SKIP
    redis_server = shutil.which("redis-server")
    if not redis_server:
        print("SKIP: needs redis-server", file=sys.stderr)
        return SKIP
    try:
        import redis  # noqa: F401
        from hotkeyd_client import HotkeyClient
        from lab import CpuQuota, Skip
    except ImportError as e:
        print(f"SKIP: {e}", file=sys.stderr)
        return SKIP

    tmp = tempfile.mkdtemp(prefix="loop-closed-")
    procs, quota, threads, kit = [], None, [], None
    failures = []
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
            quota = CpuQuota(f"loop-closed-{os.getpid()}")
            quota.add(procs[0].pid)
        except (OSError, Skip) as e:
            print(f"SKIP: no CPU quota possible: {e}", file=sys.stderr)
            return SKIP
        hk_log_path = os.path.join(tmp, "hotkeyd.log")
        hk_log = open(hk_log_path, "w")
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
        r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
        r.set(HOT, 0)
        kit = HotkeyClient(r, web)
        if not kit.wait_synced(10):
            failures.append("the kit did not sync with the feed")
            return 1
        bg = Background(port, a.bg_ops)
        # The calibration's load: user:42's, on another key and not through the kit, so that
        # a fix advised while the quota is sized never reaches user:42.
        warm = Hot(r, a.hot_ops, key=WARM)
        hot = Hot(kit, a.hot_ops)
        threads += [bg, warm, hot]
        for t in (bg, warm, hot):
            t.start()
        if a.report_from_test:
            sender = TestSender(kit, web)
            threads.append(sender)
            sender.start()

        def cpu():
            info = r.info("cpu")
            return float(info["used_cpu_sys_main_thread"]) + float(
                info["used_cpu_user_main_thread"]) if "used_cpu_sys_main_thread" in info else (
                float(info["used_cpu_sys"]) + float(info["used_cpu_user"]))

        def busy_over(seconds, cpus):
            c0, t0 = cpu(), time.monotonic()
            time.sleep(seconds)
            return (cpu() - c0) / (time.monotonic() - t0) / cpus

        warm.on.set()
        log(f"warm: background and {WARM} (plain calls), no quota")
        time.sleep(12)
        used = busy_over(10, 1)
        cpus = used / a.busy
        log(f"the shard used {used:.4f} CPUs; quota {cpus:.4f} CPUs (busy {a.busy} with no fix)")
        quota.set(cpus)

        def calibrate(cpus):
            """An op costs less under the quota (more so the tighter it is, and it moves with
            what shares the CPU): reads the busy fraction under it, and sets it again until
            the load is near --busy, clearly over the advice's target. Returns the quota."""
            warm.on.set()
            for _ in range(5):
                time.sleep(1)
                busy = busy_over(5, cpus)
                log(f"under {cpus:.4f} CPUs: {busy:.3f} busy")
                if abs(busy - a.busy) <= 0.03 or busy >= 0.99:
                    break
                cpus *= busy / a.busy
                quota.set(cpus)
            warm.on.clear()
            log(f"{WARM} stopped: waiting {QUIET:.0f} s (the shard at the background's load)")
            time.sleep(QUIET)
            return cpus

        def key_gone(timeout):
            """Waits until the key is neither hot nor fixed at the kit."""
            until = time.monotonic() + timeout
            while time.monotonic() < until:
                if not fix_in_force(kit) and not any(
                        k["key"] == HOT and k["hot"] for k in get_json(web + "/api/v1/top")["keys"]):
                    return True
                time.sleep(0.5)
            return False

        def sample(phase, run):
            now = time.monotonic()
            span = max(now - run["calls_t"], 1e-3)
            s = {"t": round(now - run["onset"], 2), "phase": phase, "fix": fix_in_force(kit),
                 "hot_ops": round((hot.calls - run["calls"]) / span),
                 "bg_ops": round((bg.sent.value - run["bg"]) / span)}
            run["calls"], run["bg"], run["calls_t"] = hot.calls, bg.sent.value, now
            try:  # the shard's own busy fraction since the last sample, from its INFO
                c, t = cpu(), time.monotonic()
                s["shard_busy"] = round((c - run["cpu"]) / (t - run["cpu_t"]) / cpus, 3)
                run["cpu"], run["cpu_t"] = c, t
            except (OSError, redis.RedisError, ZeroDivisionError) as e:
                s["error"] = str(e)
            try:
                top = get_json(web + "/api/v1/top")
                k = next((k for k in top["keys"] if k["key"] == HOT), None)
                s["busy"] = top.get("model", {}).get("shard", {}).get("busy")
                if k:
                    s["hot"] = k["hot"]
                    s["advice"] = k["advice"]
                    s["share"] = round(k["share"], 4)
                    s["demand_share"] = round(k.get("demand_share", 0), 4)
                    s["absorbed_ops"] = round(sum(k.get("absorbed_ops_per_second", {}).values()))
                    s["none_load"] = k["projected_load"].get("none")
            except (OSError, ValueError, KeyError) as e:
                s["error"] = str(e)
            run["timeline"].append(s)
            return s

        def onset():
            """Starts the key's demand and samples every 500 ms until the demand's end.
            Returns the run, with premise False when the onset's load needs no fix."""
            run = {"calls": hot.calls, "bg": bg.sent.value, "cpu": cpu(), "timeline": [],
                   "gap": [], "fix": None, "relief": None, "premise": True}
            hot.on.set()
            run["onset"] = run["calls_t"] = run["cpu_t"] = time.monotonic()
            c0, calls0, bg0 = run["cpu"], run["calls"], run["bg"]
            log(f"onset: {HOT} through the kit; waiting for the fix, then the demand lasts")
            while time.monotonic() < run["onset"] + DEMAND_SECONDS:
                s = sample("demand", run)
                if s["fix"] and run["fix"] is None:
                    run["fix"] = time.monotonic()
                    log(f"fix {s['fix']} in force at the kit {s['t']:.1f} s after onset")
                elif run["fix"] is not None and not s["fix"]:
                    run["gap"].append(s["t"])
                if (run["fix"] is not None and run["relief"] is None
                        and s.get("shard_busy") is not None and s["shard_busy"] < TARGET):
                    run["relief"] = time.monotonic()
                    log(f"relief: the shard {s['shard_busy']} busy {s['t']:.1f} s after onset")
                if "onset_busy" not in run and s["t"] >= PREMISE_SECONDS:
                    span = time.monotonic() - run["onset"]
                    try:
                        c = cpu()
                    except (OSError, redis.RedisError):
                        time.sleep(0.5)  # read at the next sample
                        continue
                    run["onset_busy"] = round((c - c0) / span / cpus, 3)
                    run["onset_hot_ops"] = round((hot.calls - calls0) / span)
                    run["onset_bg_ops"] = round((bg.sent.value - bg0) / span)
                    if run["fix"] is None and run["onset_busy"] < TARGET + MARGIN:
                        run["premise"] = False
                        return run
                time.sleep(0.5)
            return run

        # The onset must bring a load that needs a fix: the shard over the target by the
        # advice's margin, by its own INFO over the onset's first seconds. A neighbour (CI
        # compiles beside this test) moves what an op costs and how fast the drivers run;
        # when the onset's load falls short, no fix is due and relief means nothing, so the
        # key stops, the quota is sized again and the onset starts over.
        for attempt in range(1, PREMISE_TRIES + 1):
            cpus = calibrate(cpus)
            if not key_gone(20):
                failures.append(f"{HOT} still hot or fixed before its onset")
                return 1
            run = onset()
            if run["premise"]:
                break
            log(f"the onset's load needs no fix: the shard {run['onset_busy']} busy over its "
                f"first {PREMISE_SECONDS:.0f} s ({HOT} at {run['onset_hot_ops']} of "
                f"{a.hot_ops:.0f} ops/s, the background at {run['onset_bg_ops']} of "
                f"{a.bg_ops:.0f}); attempt {attempt} of {PREMISE_TRIES}")
            hot.on.clear()
            if not key_gone(HOLD + COOL_MARGIN + 5):
                failures.append(f"{HOT} still hot or fixed {HOLD + COOL_MARGIN + 5:.0f} s "
                                "after a premature onset stopped")
                return 1
        else:
            # The kit's plain path (no fix yet) slower than the load needs is the kit's fault,
            # not the neighbours': fail. Otherwise the host could not hold the load: skip.
            if run["onset_hot_ops"] < 0.8 * a.hot_ops and run["onset_busy"] < TARGET:
                failures.append(f"{HOT} through the kit ran at {run['onset_hot_ops']} of "
                                f"{a.hot_ops:.0f} ops/s with the shard {run['onset_busy']} busy")
                return 1
            print(f"SKIP: the drivers could not bring a load over {TARGET + MARGIN} busy in "
                  f"{PREMISE_TRIES} tries", file=sys.stderr)
            return SKIP
        t_onset, t_fix, t_relief = run["onset"], run["fix"], run["relief"]
        timeline, gap = run["timeline"], run["gap"]
        hot.on.clear()
        t_end = time.monotonic()
        log("demand stopped: waiting for the entry to leave")
        t_gone = None
        while time.monotonic() < t_end + HOLD + COOL_MARGIN + 5:
            s = sample("stopped", run)
            if not s["fix"]:
                t_gone = time.monotonic()
                break
            time.sleep(0.5)
        fixes = {s["fix"] for s in timeline if s["fix"]}
        episodes = [e for e in get_json(web + "/api/v1/episodes")["episodes"]
                    if e.get("key") == HOT]
        reports = metric(web, 'hotkey_demand_reports_total{result="accepted"}')
        keys = metric(web, 'hotkey_demand_keys_total{result="accepted"}')
        hk_log.flush()
        with open(hk_log_path) as f:
            lines = [l.rstrip() for l in f if any(
                m in l for m in ("advised fix changed", "CPUs changed", "episode"))]
        demand = [s for s in timeline if s["phase"] == "demand" and t_fix is not None
                  and s["t"] >= t_fix - t_onset]
        busy = [s["busy"] for s in demand if s.get("busy") is not None]
        ended = [l for l in lines if "hot key episode ended" in l and f'key="{HOT}"' in l]
        result = {
            "cpus_used_no_quota": round(used, 4),
            "onset_attempts": attempt,
            "shard_busy_onset": run.get("onset_busy"),
            "hot_ops_onset": run.get("onset_hot_ops"),
            "bg_ops_onset": run.get("onset_bg_ops"),
            "quota_cpus": round(cpus, 4),
            "seconds_onset_to_fix": None if t_fix is None else round(t_fix - t_onset, 1),
            "seconds_onset_to_relief": None if t_relief is None else round(t_relief - t_onset, 1),
            "shard_busy_before_fix": [s.get("shard_busy") for s in timeline
                                      if t_fix is None or s["t"] < t_fix - t_onset],
            "seconds_fix_in_force": None if t_fix is None else round(t_end - t_fix, 1),
            "gaps_at": gap,
            "seconds_stop_to_withdrawn": None if t_gone is None else round(t_gone - t_end, 1),
            "busy_with_fix": [min(busy), max(busy)] if busy else None,
            "absorbed_ops_last": next((s.get("absorbed_ops") for s in reversed(demand)
                                       if s.get("absorbed_ops") is not None), None),
            "none_load_last": next((s.get("none_load") for s in reversed(demand)
                                    if s.get("none_load") is not None), None),
            "demand_reports_accepted": reports,
            "demand_keys_accepted": keys,
            "kit": kit.stats(),
            "hot_calls": hot.calls,
            "hot_errors": hot.errors,
            "episodes": episodes[:3],
            "log": lines,
            "timeline": timeline[::10],
        }
        print(json.dumps(result, indent=1))
        if t_fix is None:
            failures.append("no fix reached the kit")
        elif t_relief is None or t_relief - t_onset > ONSET_TO_RELIEF:
            failures.append(f"onset to relief {result['seconds_onset_to_relief']} s, over "
                            f"{ONSET_TO_RELIEF:.0f} s")
        if reports == 0:
            failures.append("hotkeyd accepted no demand report (does the kit send them? "
                            "--report-from-test sends them from the test)")
        if gap:
            failures.append(f"the fix had a gap while the demand lasted, at {gap[:5]} s")
        if t_gone is None:
            failures.append(f"the fix was not withdrawn within {HOLD + COOL_MARGIN:.0f} s "
                            "of the demand's end")
        # The episodes say what the kits applied: the advice turns to none while the fix
        # works, the fix in force does not.
        last_in_force = (episodes[0].get("in_force") or {}) if episodes else {}
        if fixes and (last_in_force.get("by") != "feed" or
                      last_in_force.get("strategy") not in fixes):
            failures.append(f"the key's last episode names {last_in_force or 'no fix'} in "
                            f"force, not the feed's {sorted(fixes)}")
        if fixes and not (ended and any(f"in_force={f}" in ended[-1] for f in fixes)):
            failures.append(f"the key's last episode end line names no fix in force: "
                            f"{ended[-1] if ended else 'no end line'}")
        if failures:  # last, where a truncated CI log still shows them
            gap_rows = [s for s in timeline if gap and gap[0] - 15 <= s["t"] <= gap[-1] + 5]
            for row in gap_rows[::2]:
                log(f"  around the gap: {json.dumps(row)}")
            for line in lines[-40:]:
                log(f"  hotkeyd: {line}")
        return 1 if failures else 0
    finally:
        for f in failures:
            log(f"FAIL: {f}")
        for t in threads:
            getattr(t, "stop").set()
            if hasattr(t, "on"):
                t.on.clear()
        if kit:
            kit.close()
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
