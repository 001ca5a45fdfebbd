#!/usr/bin/env python3
"""fake_shard_e2e.py: a real hotkeyd asking a fake shard, which speaks RESP on a loopback
port and reports what no real server can, never advises on the impossible figures.

Cases (each a hotkeyd with --shard.address=<the fake>, --shard.interval=1s, fed one hot key
over UDP at about 3,000 ops/s):
  busy_1000     the shard's CPU time grows 1000 s a second on one core (busy 1000): every
                answer is refused (hotkey_shard_answers_rejected_total{reason="busy"}
                grows), the shard's busy is unknown (null), and so is the capacity (no
                --cluster.capacity is given): the hot key is advised nothing
  cpu_1e300     CPU time growing 1e300 s a second: the same
  overlap       CLUSTER NODES gives 10,000 nodes every slot: refused (reason
                "slot_overlap"); the shard count stays configured; /api/v1/model and
                /api/v1/slots stay small (printed)
  stops         the shard answers possible figures (busy 0.5), then stops answering: the
                measured capacity is used, then, once its last load leaves the rate window
                (10 s), the headroom is unknown and no key is advised, as the log says
  onset         with --shard.interval=10s, the hot key starts after the first scheduled
                answer: the shard is asked within 2 s of the key turning hot (not at its
                schedule), and the first advice comes one interval after that, within 14 s
                (at the schedule it would wait for the answer begun after the onset: about
                19 s)

Usage: fake_shard_e2e.py HOTKEYD [CASE ...]
"""

import os
import socket
import socketserver
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import hotkeyd_e2e as e2e  # noqa: E402

HOTKEYD = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)


class FakeShard:
    """A RESP server on a free loopback port. `info(elapsed)` gives INFO's fields as a dict;
    `nodes()` the CLUSTER NODES text (None: outside a cluster). stop() closes it for good."""

    def __init__(self, info, nodes=None):
        self.t0 = time.monotonic()
        self.info, self.nodes = info, nodes
        self.conns = []
        self.asked = []  # when each INFO came (time.monotonic())
        shard = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                shard.conns.append(self.request)
                buf = b""
                while True:
                    try:
                        data = self.request.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    buf += data
                    if not buf.endswith(b"\r\n"):
                        continue
                    if b"CLUSTER" in buf:
                        body = (shard.nodes() or "").encode()
                    else:
                        shard.asked.append(time.monotonic())
                        fields = shard.info(time.monotonic() - shard.t0)
                        body = "".join(f"{k}:{v}\r\n" for k, v in fields.items()).encode()
                    buf = b""
                    self.request.sendall(b"$%d\r\n%s\r\n" % (len(body), body))

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        """Closes the listener and every connection: the shard answers nothing more."""
        self.server.shutdown()
        self.server.server_close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def redis_info(cpu_per_second, ops_per_second=3000, cluster=False):
    def info(elapsed):
        return {"redis_version": "7.0.15", "process_id": 4242,
                "total_commands_processed": int(ops_per_second * elapsed),
                "used_cpu_sys_main_thread": "0.000000",
                "used_cpu_user_main_thread": repr(cpu_per_second * elapsed),
                "cluster_enabled": 1 if cluster else 0}
    return info


def start(work, shard, *flags, interval="1s", window="2s"):
    rules = work.file("rules.yml")
    with open(rules, "w") as f:
        f.write("alert:\n  share_threshold: 0.1\n  min_dwell: 0s\n")
    return e2e.Hotkeyd(HOTKEYD, f"--shard.address=127.0.0.1:{shard.port}",
                       f"--shard.interval={interval}", f"--config.file={rules}",
                       f"--track.rate-window={window}", *flags, work=work)


class Load:
    """Sends about 3,000 events a second, half of them one hot key, until stopped."""

    def __init__(self, d):
        self.stop_flag = False
        self.thread = threading.Thread(target=self.run, args=(d.udp,), daemon=True)
        self.thread.start()

    def run(self, port):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        batch = b"\n".join([b"r hot:key"] * 50 + [b"r cold:%d" % i for i in range(50)])
        while not self.stop_flag:
            s.sendto(batch, ("127.0.0.1", port))
            time.sleep(1 / 30)

    def stop(self):
        self.stop_flag = True
        self.thread.join()


def model_of(d):
    return d.top()["model"]


def rejected(d, reason):
    return d.metric("hotkey_shard_answers_rejected_total", {"reason": reason}) or 0


def impossible_busy(work, cpu_per_second, label):
    shard = FakeShard(redis_info(cpu_per_second))
    d = start(work, shard)
    load = Load(d)
    try:
        advices = set()
        end = time.monotonic() + 12
        while time.monotonic() < end:
            top = d.top()
            advices |= {k["advice"] for k in top["keys"] if k.get("advice")}
            time.sleep(0.25)
        m = model_of(d)
        n = rejected(d, "busy")
        e2e.log(f"  {label}: capacity {m['capacity']['value']} ({m['capacity']['origin']}), "
                f"shard busy {m['shard'].get('busy')}, answers rejected (busy) {n:g}, "
                f"advice seen {sorted(advices) or 'none'}")
        e2e.check(n >= 5, f"the answers are refused and counted: {n}")
        e2e.check(m["capacity"]["origin"] == "unknown",
                  f"the capacity is unknown, not measured from the refused answers: "
                  f"{m['capacity']}")
        e2e.check(m["shard"].get("busy") is None and m["shard"].get("rejected") == "busy",
                  f"the shard's busy is unknown, and why is said: {m['shard']}")
        e2e.check(advices <= {"none"}, f"no fix advised on refused figures: {advices}")
        e2e.check("impossible" in d.logs().decode(), "the log says the answer is refused")
    finally:
        load.stop()
        shard.stop()


def case_busy_1000(work):
    impossible_busy(work, 1000.0, "busy 1000")


def case_cpu_1e300(work):
    impossible_busy(work, 1e300, "CPU 1e300 s/s")


def case_overlap(work):
    nodes = "".join(
        f"{i:040x} 127.0.0.{i % 250 + 1}:{7000 + i % 1000}@17000 "
        f"{'myself,master' if i == 0 else 'master'} - 0 0 1 connected 0-16383\n"
        for i in range(10000))
    shard = FakeShard(redis_info(0.5, cluster=True), lambda: nodes)
    d = start(work, shard, "--track.slots=true")
    load = Load(d)
    try:
        time.sleep(6)
        m = model_of(d)
        model_bytes = len(d.get_ok("/api/v1/model"))
        slots_bytes = len(d.get_ok("/api/v1/slots"))
        n = rejected(d, "slot_overlap")
        e2e.log(f"  overlapping slots: shards {m['shards']['value']} ({m['shards']['origin']}), "
                f"answers rejected (slot_overlap) {n:g}, /api/v1/model {model_bytes} bytes, "
                f"/api/v1/slots {slots_bytes} bytes")
        e2e.check(n >= 3, f"the answers are refused and counted: {n}")
        e2e.check(m["shards"]["origin"] == "configured", f"the shard count stays configured: "
                  f"{m['shards']}")
        e2e.check(model_bytes < 64 << 10 and slots_bytes < 64 << 10,
                  f"the answers stay small: {model_bytes}, {slots_bytes} bytes")
    finally:
        load.stop()
        shard.stop()


def case_stops(work):
    shard = FakeShard(redis_info(0.5))
    d = start(work, shard)
    load = Load(d)
    try:
        m = e2e.wait_until(lambda: (lambda m: m if m["capacity"]["origin"] == "measured" else None)(
            model_of(d)), 15, "a measured capacity")
        e2e.log(f"  answering: capacity {m['capacity']['value']:g} (measured)")
        shard.stop()
        t0 = time.monotonic()
        m = e2e.wait_until(
            lambda: (lambda m: m if m["capacity"]["origin"] == "unknown" else None)(
                model_of(d)), 20, "an unknown capacity once the shard is silent")
        e2e.log(f"  silent: capacity unknown after {time.monotonic() - t0:.1f} s; "
                f"shard up {m['shard']['up']}")
        # Two clocks: the load leaves the window on the daemon's ticks, and the shard is down
        # once a round fails, one interval at most after it stopped (a loaded machine, or a
        # sanitizer build, may take a little longer).
        m = e2e.wait_until(lambda: (lambda m: m if not m["shard"]["up"] else None)(
            model_of(d)), 5, "the shard down")
        e2e.log(f"  down after {time.monotonic() - t0:.1f} s")
        e2e.check("its headroom is unknown" in d.logs().decode(),
                  "the log says the headroom becomes unknown")
    finally:
        load.stop()


def case_onset(work):
    shard = FakeShard(redis_info(0.5))
    d = start(work, shard, interval="10s", window="20s")
    e2e.wait_until(lambda: shard.asked, 15, "the first scheduled answer")
    load = Load(d)
    try:
        def hot():
            return any(k["hot"] for k in d.top()["keys"])
        e2e.wait_until(hot, 5, "the key hot")
        hot_at = time.monotonic()
        asked = e2e.wait_until(lambda: [t for t in shard.asked if t > shard.asked[0]], 5,
                               "the shard asked at the onset")
        e2e.log(f"  asked {asked[0] - hot_at:+.2f} s from the key seen hot; the last scheduled "
                f"answer {hot_at - shard.asked[0]:.2f} s before")

        def advised():
            return any(k["hot"] and k.get("advice") for k in d.top()["keys"])
        e2e.wait_until(advised, 30, "the first advice")
        e2e.log(f"  first advice {time.monotonic() - hot_at:.2f} s after the key was seen hot")
        e2e.check(asked[0] - hot_at < 2, "the shard is asked at the onset, not at its schedule")
        e2e.check(time.monotonic() - hot_at < 14,
                  "the first advice one interval (10 s) after the onset, not two")
    finally:
        load.stop()
        shard.stop()


CASES = [("busy_1000", case_busy_1000), ("cpu_1e300", case_cpu_1e300), ("overlap", case_overlap),
         ("stops", case_stops), ("onset", case_onset)]

if __name__ == "__main__":
    e2e.run_cases("fake-shard", CASES, sys.argv[2:])
