#!/usr/bin/env python3
"""feed_e2e.py: the hot-key feed (GET /api/v1/hotkeys and its Server-Sent Events stream)
against a real `hotkeyd --demo`, whose three celebrity keys turn hot within a second (with a
1 s rate window, advised within two).

Cases, each asserted:
  stream   the first event is a snapshot; the demo's keys arrive as add events with
           consecutive versions, key_b64 decoding to the key; every event carries id:
           <version>; heartbeats follow at heartbeat_seconds (the median gap is within a
           factor of two of it: the tick is 250 ms); GET agrees with the stream.
  bounds   --feed.max-subscribers=3. A subscriber that never reads (a 4 KiB receive
           buffer) is dropped as slow while events flow (pins toggled by reloads), and
           counted in hotkey_feed_subscribers_dropped_total{reason="slow"}; another
           subscriber keeps receiving every event, without a version gap. With three
           streams open, the fourth is answered 503 and counted as reason="limit".
  memory   --feed.max-subscribers=300: 300 streams opened and their heads read; what they
           add to hotkeyd's resident memory, a stream, is under the session allowance
           hotkey_memory_budget_bytes counts (http::EventStream::kSessionBytes, 48 KiB).
  auth     basic auth on and key_label hash: no credentials, 401 on both paths; with
           them, entries carry key_b64. Without basic auth and key_label hash: entries
           carry only the label (no key_b64, no key). --feed.require-auth without
           basic_auth_users: --check-config and a start both refuse, naming the flag.

Loopback only; every wait is bounded; every process started is stopped.

Usage: feed_e2e.py HOTKEYD [CASE ...]
"""

import base64
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "lib"))
from hotkeyd_e2e import Hotkeyd, check, log, run_cases, wait_until  # noqa: E402

BINARY = None
DEMO_KEYS = {b"item:flash-sale:stock", b"post:viral:likes", b"user:celebrity:profile"}
PASSWORD = "feed-e2e-password"


def write(work, name, text):
    path = work.file(name)
    with open(path, "w") as f:
        f.write(text)
    return path


def hotkeyd(work, *flags):
    # UDP off: the demo alone, as hotkeyd --demo runs it.
    return Hotkeyd(BINARY, "--demo", "--track.rate-window=1s", "--udp.listen-address=", *flags,
                   work=work)


class Stream:
    """A reader of /api/v1/hotkeys/stream on its own thread: events as (type, id, data)."""

    def __init__(self, port, auth=None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {}
        if auth:
            headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
        self.conn.request("GET", "/api/v1/hotkeys/stream", headers=headers)
        self.sock = self.conn.sock  # http.client lets go of it for a Connection: close answer
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.events = []  # (type, id, data dict, monotonic time)
        self.closed = False
        self.lock = threading.Lock()
        if self.status == 200:
            threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        kind, ident, data = None, None, None
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("id: "):
                    ident = int(line[4:])
                elif line.startswith("data: "):
                    data = json.loads(line[6:])
                elif line == "":
                    with self.lock:
                        self.events.append((kind, ident, data, time.monotonic()))
                    kind, ident, data = None, None, None
        except (OSError, ValueError):
            pass
        self.closed = True

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()


def check_versions(events):
    """Every non-heartbeat event is one version after the one before; ids match."""
    version = None
    for kind, ident, data, _ in events:
        check(ident == data["version"], f"{kind} id {ident} is its version {data['version']}")
        if kind == "snapshot":
            version = data["version"]
        elif kind == "heartbeat":
            check(data["version"] == version, f"heartbeat at version {version}")
        else:
            check(data["version"] == version + 1, f"{kind} {data['version']} follows {version}")
            version = data["version"]


def case_stream(work):
    d = hotkeyd(work)
    s = Stream(d.web)
    check(s.status == 200, f"stream answers 200 (got {s.status})")
    check(s.resp.getheader("Content-Type", "").startswith("text/event-stream"),
          "stream is text/event-stream")
    wait_until(lambda: {base64.b64decode(e[2]["entry"]["key_b64"])
                        for e in s.snapshot() if e[0] == "add"} >= DEMO_KEYS,
               20, "the demo keys arrive as add events")
    hb = s.snapshot()[0][2]["heartbeat_seconds"]
    wait_until(lambda: sum(1 for e in s.snapshot() if e[0] == "heartbeat") >= 6, 10 * hb + 10,
               "six heartbeats")
    events = s.snapshot()
    check(events[0][0] == "snapshot", "the first event is the snapshot")
    check_versions(events)
    for kind, _, data, _ in events:
        if kind == "add":
            e = data["entry"]
            check(e["key"].encode() == base64.b64decode(e["key_b64"]), "key is key_b64's text")
            check(e["origin"] == "advice" and e["match"] == "key", "advised exact keys")
            check(e["mode"] in ("cache", "replicate", "split", "split_cache", "isolate"), "mode")
    beats = [t for kind, _, _, t in events if kind == "heartbeat"]
    gaps = [b - a for a, b in zip(beats, beats[1:])]
    median = statistics.median(gaps)
    check(hb / 2 <= median <= hb * 2, f"heartbeat gap median {median:.2f} s near {hb} s")
    status, body = d.get("/api/v1/hotkeys")
    check(status == 200, "GET /api/v1/hotkeys answers 200")
    got = json.loads(body)
    check(got["version"] >= events[-1][2]["version"], "GET is at the stream's version or later")
    check({base64.b64decode(e["key_b64"]) for e in got["entries"]} >= DEMO_KEYS,
          "GET lists the demo keys")
    check(d.metric("hotkey_feed_subscribers") == 1, "one subscriber counted")
    s.close()
    log(json.dumps({"case": "stream", "events": len(events), "heartbeat_gap_median_s": median,
                    "version": got["version"]}))
    d.stop()


def pins(round_no, count=40):
    lines = ["feed:", "  lease: 2s", "  pin:"]
    for i in range(count):
        lines.append(f"    - key: \"{'p' * 100}{round_no % 2}-{i}\"")
        lines.append("      mode: cache")
    return "\n".join(lines) + "\n"


def reload(d):
    conn = http.client.HTTPConnection("127.0.0.1", d.web, timeout=10)
    conn.request("POST", "/-/reload")
    status = conn.getresponse().status
    conn.close()
    check(status == 200, f"reload answers 200 (got {status})")


def case_bounds(work):
    rules = write(work, "rules.yml", pins(0))
    d = hotkeyd(work, "--feed.max-subscribers=3", f"--config.file={rules}",
                "--web.enable-lifecycle")
    reader = Stream(d.web)
    check(reader.status == 200, "reader subscribed")
    # A subscriber that never reads: a tiny receive window, the request sent, nothing read.
    stuck = socket.socket()
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.connect(("127.0.0.1", d.web))
    stuck.sendall(b"GET /api/v1/hotkeys/stream HTTP/1.1\r\nHost: x\r\n\r\n")
    wait_until(lambda: d.metric("hotkey_feed_subscribers") == 2, 10, "two subscribers")
    round_no = 0

    def dropped():
        nonlocal round_no
        round_no += 1
        write(work, "rules.yml", pins(round_no))
        reload(d)
        time.sleep(0.3)  # a tick or so: each round's events go out before the next
        return d.metric("hotkey_feed_subscribers_dropped_total", {"reason": "slow"}) >= 1

    wait_until(dropped, 60, "the stuck subscriber dropped as slow", interval=0)
    stuck.close()
    check(d.metric("hotkey_feed_subscribers") == 1, "the reader is still subscribed")
    before = len(reader.snapshot())
    write(work, "rules.yml", pins(round_no + 1))
    reload(d)
    wait_until(lambda: len(reader.snapshot()) > before + 40, 10, "the reader keeps receiving")
    check(not reader.closed, "the reader's stream is open")
    check_versions(reader.snapshot())
    # The limit: three streams open, the fourth refused.
    others = [Stream(d.web), Stream(d.web)]
    check(all(o.status == 200 for o in others), "second and third subscribers accepted")
    fourth = Stream(d.web)
    check(fourth.status == 503, f"the fourth subscriber gets 503 (got {fourth.status})")
    check(d.metric("hotkey_feed_subscribers_dropped_total", {"reason": "limit"}) == 1,
          "the refusal is counted")
    # A scrape still gets through with every stream slot taken.
    check(d.get("/metrics")[0] == 200, "scrapes are served beside full streams")
    log(json.dumps({"case": "bounds", "reload_rounds": round_no,
                    "reader_events": len(reader.snapshot())}))
    for s in [reader, *others]:
        s.close()
    d.stop()


SESSION_ALLOWANCE = 48 * 1024


def case_memory(work):
    n = 300
    d = hotkeyd(work, f"--feed.max-subscribers={n}")
    # A first stream opened and closed, so the one-time costs (buffers, the snapshot's
    # JSON) are paid before the baseline.
    socks = []

    def open_streams(k):
        for _ in range(k):
            s = socket.create_connection(("127.0.0.1", d.web), timeout=5)
            s.sendall(b"GET /api/v1/hotkeys/stream HTTP/1.1\r\nHost: x\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(4096)
            socks.append(s)

    open_streams(1)
    socks.pop().close()
    time.sleep(0.5)
    rss0 = d.rss()
    open_streams(n)
    wait_until(lambda: d.metric("hotkey_feed_subscribers") == n, 10, f"{n} subscribers")
    time.sleep(1)  # a few ticks and a heartbeat
    per_stream = (d.rss() - rss0) / n
    budget = d.metric("hotkey_feed_memory_bound_bytes")
    print(json.dumps({"case": "memory", "streams": n, "rss_per_stream_bytes": round(per_stream),
                      "feed_memory_bound_bytes": budget}), flush=True)
    for s in socks:
        s.close()
    check(per_stream <= SESSION_ALLOWANCE,
          f"a stream adds {per_stream:.0f} bytes, under the allowance {SESSION_ALLOWANCE}")
    check(budget == n * (64 * 1024 + SESSION_ALLOWANCE), "the feed's bound is exported")
    d.stop()


def case_auth(work):
    pw_hash = subprocess.run(["htpasswd", "-nbBC", "10", "u", PASSWORD], check=True,
                             capture_output=True, text=True).stdout.strip().split(":", 1)[1]
    web = write(work, "web.yml", f"basic_auth_users:\n  u: '{pw_hash}'\n")
    rules = write(work, "rules.yml", "export:\n  key_label: hash\n")
    d = hotkeyd(work, f"--web.config.file={web}", "--web.health-without-auth",
                f"--config.file={rules}")
    check(d.get("/api/v1/hotkeys")[0] == 401, "GET without credentials: 401")
    check(Stream(d.web).status == 401, "stream without credentials: 401")
    s = Stream(d.web, auth=f"u:{PASSWORD}")
    check(s.status == 200, "stream with credentials: 200")
    wait_until(lambda: {base64.b64decode(e[2]["entry"]["key_b64"])
                        for e in s.snapshot() if e[0] == "add"} >= DEMO_KEYS,
               20, "authenticated subscriber gets raw keys")
    for kind, _, data, _ in s.snapshot():
        if kind == "add":
            check(data["entry"]["label"].startswith("h:"), "labels are hashes")
    s.close()
    d.stop()

    plain = write(work, "web-plain.yml",
                  "http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
    for extra in ([], [f"--web.config.file={plain}"]):
        r = subprocess.run([BINARY, "--demo", "--feed.require-auth", "--check-config", *extra],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 1 and "--feed.require-auth" in r.stdout,
              f"--check-config refuses --feed.require-auth without users: {r.stdout[-300:]}")
        r = subprocess.run([BINARY, "--demo", "--udp.listen-address=", "--web.listen-address=:0",
                            "--feed.require-auth", *extra],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode != 0 and "--feed.require-auth" in r.stderr + r.stdout,
              f"a start refuses --feed.require-auth without users: {r.stderr[-300:]}")
    d = hotkeyd(work, f"--web.config.file={web}", "--web.health-without-auth",
                "--feed.require-auth", f"--config.file={rules}")
    s = Stream(d.web, auth=f"u:{PASSWORD}")
    check(s.status == 200, "--feed.require-auth with basic auth: the stream with credentials")
    s.close()
    d.stop()

    d = hotkeyd(work, f"--config.file={rules}")
    s = Stream(d.web)
    wait_until(lambda: sum(1 for e in s.snapshot() if e[0] == "add") >= 3, 20, "three adds")
    for kind, _, data, _ in s.snapshot():
        if kind == "add":
            e = data["entry"]
            check("key_b64" not in e and "key" not in e, "no raw key without authentication")
            check(e["label"].startswith("h:"), "the hash label only")
    status, body = d.get("/api/v1/hotkeys")
    check(status == 200 and b"key_b64" not in body, "GET hides raw keys too")
    s.close()
    d.stop()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BINARY = sys.argv[1]
    run_cases("feed", [("stream", case_stream), ("bounds", case_bounds), ("memory", case_memory),
                       ("auth", case_auth)],
              sys.argv[2:])
