"""The kit against the feed's recorded contract: transcripts of a real hotkeyd's answers
(tests/clients/contract/feed/*.http, recorded and checked against the daemon by
tests/clients/contract/feed_contract.py), replayed byte for byte by a local HTTP server.

No redis-server is needed: the kit's origin here is a stub whose commands answer at once.
The transcripts are found from the source tree (HOTKEYD_CONTRACT_DIR overrides it); the kit
under test is the installed package.
"""

import base64
import http.server
import json
import os
import random
import socket
import threading
import time
import unittest

import redis

from fixtures import entry, wait_until

from hotkeyd_client import STAT_NAMES, FeedConfigError, HotkeyClient
from hotkeyd_client.feed import (REFRESH_MODES, SPLIT_MODES, FeedFollower, SseParser,
                                 parse_entry)

HERE = os.path.dirname(os.path.abspath(__file__))
CONTRACT = os.environ.get("HOTKEYD_CONTRACT_DIR") or os.path.join(
    HERE, "..", "..", "..", "tests", "clients", "contract", "feed")
WAIT = 20


def transcript(name):
    with open(os.path.join(CONTRACT, name + ".http"), "rb") as f:
        return f.read()


def body_of(raw):
    return raw.partition(b"\r\n\r\n")[2]


def events_of(raw):
    """(type, data dict) of every event in a stream transcript."""
    out = []
    for block in body_of(raw).split(b"\n\n")[:-1]:
        kind = data = None
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                kind = line[7:].decode()
            elif line.startswith(b"data: "):
                data = json.loads(line[6:])
        out.append((kind, data))
    return out


class StubRedis(redis.Redis):
    """A redis.Redis that never connects: GET answers b"v", counters 1."""

    def execute_command(self, *args, **options):
        return 1 if args[0] in ("INCR", "INCRBY", "DECR", "DECRBY") else b"v"


class Replay:
    """A loopback HTTP server that answers each request with a transcript's bytes: the
    transcripts queued for its method and path in turn (the last one again once the queue is
    down to it). A stream transcript is followed by silence with the connection held open
    (hold=True) or by closing it, as hotkeyd does on shutdown. Records each request:
    (monotonic time, method, path, headers, body)."""

    def __init__(self, routes, hold=True):
        self.routes = {k: list(v) for k, v in routes.items()}
        self.hold = hold
        self.requests = []
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def _accept(self):
        while not self.stop_event.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                c.close()
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        method, path, _ = lines[0].split(" ")
        headers = dict(line.split(": ", 1) for line in lines[1:])
        n = int(headers.get("Content-Length", 0))
        while len(body) < n:
            body += c.recv(65536)
        with self.lock:
            self.requests.append((time.monotonic(), method, path, headers, body))
            queue = self.routes.get((method, path))
            name = None
            if queue:
                name = queue[0] if len(queue) == 1 else queue.pop(0)
        raw = transcript(name) if name else b"HTTP/1.1 599 No transcript\r\nContent-Length: 0\r\n\r\n"
        try:
            c.sendall(raw)
            if self.hold and b"text/event-stream" in raw.partition(b"\r\n\r\n")[0]:
                self.stop_event.wait()
        except OSError:
            pass
        c.close()

    def count(self, method, path):
        with self.lock:
            return sum(1 for r in self.requests if r[1] == method and r[2] == path)

    def close(self):
        self.stop_event.set()
        self.sock.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


SET = ("GET", "/api/v1/hotkeys")
STREAM = ("GET", "/api/v1/hotkeys/stream")
DEMAND = ("POST", "/api/v1/hotkeys/demand")


def fix(e):
    """What a client acts on, from an entry object or an EntryInfo."""
    if isinstance(e, dict):
        return (base64.b64decode(e["key_b64"]), e["mode"], e.get("refresh_seconds"),
                e.get("split_factor"), e.get("match") == "prefix")
    return (e.key, e.mode, e.refresh_seconds, e.split_factor, e.prefix)


class ContractTest(unittest.TestCase):
    def setUp(self):
        self.servers, self.kits = [], []

    def tearDown(self):
        for k in self.kits:
            k.close()
        for s in self.servers:
            s.close()

    def serve(self, routes, hold=True):
        s = Replay(routes, hold)
        self.servers.append(s)
        return s

    def kit(self, url, **kw):
        k = HotkeyClient(StubRedis(), url, **kw)
        self.kits.append(k)
        return k

    def test_the_set_names_every_mode_with_the_fields_the_kit_needs(self):
        doc = json.loads(body_of(transcript("set")))
        modes = {e["mode"] for e in doc["entries"]}
        self.assertEqual(modes, {"cache", "replicate", "split", "split_cache", "isolate"})
        for obj in doc["entries"]:
            e = parse_entry(obj, 0.0, doc["lease_seconds"])
            self.assertIsNotNone(e, obj)
            # refresh_seconds exactly for the modes the kit keeps a copy for.
            self.assertEqual("refresh_seconds" in obj, obj["mode"] in REFRESH_MODES, obj)
            self.assertEqual("split_factor" in obj, obj["mode"] in SPLIT_MODES, obj)
        self.assertEqual(doc["heartbeat_seconds"] * 5, doc["lease_seconds"])

    def test_the_kits_event_parser_reads_the_recorded_stream(self):
        p = SseParser()
        got = []
        for line in body_of(transcript("stream")).decode().splitlines(keepends=True):
            ev = p.line(line)
            if ev:
                got.append(ev)
        self.assertEqual([(k, json.loads(d)) for k, d, _ in got], events_of(transcript("stream")))
        for kind, data, ident in got:
            self.assertEqual(ident, str(json.loads(data)["version"]), kind)  # id: <version>

    def test_the_fixture_sends_the_fields_the_daemon_sends(self):
        # fixtures.entry() stands in for hotkeyd in the tests with a real Redis: it must
        # send, mode by mode, the fields of the recorded entries (values aside).
        doc = json.loads(body_of(transcript("set")))
        for obj in doc["entries"]:
            if obj["match"] != "key":
                continue
            made = entry(base64.b64decode(obj["key_b64"]), obj["mode"])
            self.assertEqual(set(made), set(obj), obj["mode"])

    def test_the_stream_leads_to_the_set_hotkeyd_serves_after_it(self):
        events = events_of(transcript("stream"))
        self.assertEqual(events[0][0], "snapshot")
        self.assertEqual({k for k, _ in events[1:]}, {"heartbeat", "add", "change", "remove"})
        last = events[-1][1]["version"]
        s = self.serve({STREAM: ["stream"]})
        kit = self.kit(s.url)
        self.assertTrue(kit.wait_synced(WAIT))
        wait_until(lambda: kit.health()[0].version == last, WAIT, "the stream's last version")
        want = json.loads(body_of(transcript("set-after")))
        self.assertEqual(want["version"], last)
        self.assertEqual(sorted(fix(e) for e in kit.entries()),
                         sorted(fix(e) for e in want["entries"]))
        self.assertEqual(kit.stats()["ignored_entries"], 0)
        self.assertEqual(kit.stats()["feed_resyncs"], 0)  # no gap in a real stream
        # Every entry held is renewed by the heartbeats: all live.
        self.assertTrue(all(e.lease_left > 0 for e in kit.entries()))

    def test_a_restart_takes_the_new_snapshot_as_the_whole_truth(self):
        before = events_of(transcript("restart-1"))
        after = events_of(transcript("restart-2"))
        self.assertLess(after[0][1]["version"], before[-1][1]["version"])  # versions restart
        s = self.serve({STREAM: ["restart-1", "restart-2"]}, hold=True)
        # restart-1 ends (hotkeyd shut down): served, then the connection closes.
        s.hold = False
        kit = self.kit(s.url)
        wait_until(lambda: s.count(*STREAM) >= 2, WAIT, "a reconnect after the restart")
        s.hold = True
        wait_until(lambda: kit.health()[0].version == after[-1][1]["version"], WAIT,
                   "the restarted daemon's version")
        want = after[0][1]["entries"]
        self.assertEqual(sorted(fix(e) for e in kit.entries()), sorted(fix(e) for e in want))

    def test_401_and_404_are_configuration_errors_not_silent_retries(self):
        for name, words in (("unauthorized", "auth"), ("not-found", "path")):
            with self.subTest(name):
                s = self.serve({STREAM: [name]})
                kit = self.kit(s.url)
                with self.assertRaises(FeedConfigError) as caught:
                    kit.wait_synced(WAIT)
                self.assertIn(words, str(caught.exception))
                (h,) = kit.health()
                self.assertTrue(h.misconfigured)
                self.assertFalse(h.connected)
                self.assertIn(name == "unauthorized" and "401" or "404", h.last_error)
                # Retried only after BACKOFF_MAX (30 s), not at the reconnect backoff.
                time.sleep(1.5)
                self.assertEqual(s.count(*STREAM), 1)

    def test_429_and_503_wait_their_retry_after(self):
        for name in ("busy", "too-many-subscribers"):
            with self.subTest(name):
                raw = transcript(name)
                self.assertIn(b"\r\nRetry-After: 1", raw)
                s = self.serve({STREAM: [name, "stream"]})
                kit = self.kit(s.url)
                self.assertTrue(kit.wait_synced(WAIT))
                first, second = [r[0] for r in s.requests[:2]]
                # Retry-After: 1 is the floor; the reconnect backoff alone starts at 0.25 s.
                self.assertGreaterEqual(second - first, 1.0)
                self.assertIsNone(kit.health()[0].last_error)

    def test_demand_is_reported_to_the_feed_that_named_the_key(self):
        routes = {STREAM: ["stream"], DEMAND: ["demand-accepted"]}
        have_transcript = os.path.exists(os.path.join(CONTRACT, "demand-accepted.http"))
        if not have_transcript:
            routes[DEMAND] = ["set"]  # any 2xx would do; the daemon's is checked when recorded
        s = self.serve(routes)
        kit = self.kit(s.url, rng=random.Random(7))
        self.assertTrue(kit.wait_synced(WAIT))
        last = events_of(transcript("stream"))[-1][1]["version"]
        wait_until(lambda: kit.health()[0].version == last, WAIT, "the stream's last version")
        cached = next(e for e in kit.entries() if e.mode == "cache" and not e.prefix)
        split = next(e for e in kit.entries() if e.mode == "split")
        for _ in range(11):
            kit.get(cached.key)     # one fetch, ten copies served
        for _ in range(40):
            kit.incr(split.key)
        wait_until(lambda: s.count(*DEMAND) >= 1, WAIT, "a demand report")
        _, _, path, headers, body = next(r for r in s.requests if r[1] == "POST")
        self.assertEqual(headers["Content-Type"], "application/json")
        doc = json.loads(body)
        self.assertTrue(0 < doc["interval_seconds"] <= 60)
        got = {base64.b64decode(k["key_b64"]): (k["reads"], k["writes"]) for k in doc["keys"]}
        self.assertEqual(got[cached.key], (10, 0))
        # Writes to parts other than the key itself (part 0), as the seeded draw chose them.
        draw = random.Random(7)
        want_writes = sum(1 for _ in range(40) if int(draw.random() * split.split_factor))
        self.assertEqual(got[split.key], (0, want_writes))
        self.assertEqual(len(got), 2)  # keys with nothing absorbed are left out


if __name__ == "__main__":
    unittest.main()


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


class DemandTest(unittest.TestCase):
    """The report's rules (docs/feed.md, "Demand a kit absorbs") on a fake clock, against a
    local server whose answers the test sets."""

    def setUp(self):
        self.answers = []   # (status, headers) per POST, in turn
        self.bodies = []
        test = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                test.bodies.append(json.loads(self.rfile.read(
                    int(self.headers["Content-Length"]))))
                status, headers = test.answers.pop(0) if test.answers else (204, {})
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addCleanup(self.server.shutdown)
        self.clock = FakeClock()
        self.lock = threading.Lock()
        self.stats = dict.fromkeys(STAT_NAMES, 0)
        self.f = FeedFollower(f"http://127.0.0.1:{self.server.server_address[1]}",
                              on_retire=lambda e, expired=False: None, stats=self.stats,
                              stats_lock=self.lock, clock=self.clock)

    def add(self, key, reads, writes):
        with self.lock:
            self.f.ledger.add_locked(key, reads, writes)

    def test_nothing_is_sent_while_every_count_is_zero(self):
        self.clock.t += 1
        self.assertIsNone(self.f.report_demand())
        self.assertEqual(self.bodies, [])

    def test_a_failed_report_joins_the_next_and_a_429_holds_reports_back(self):
        self.add(b"k", 5, 1)
        self.clock.t += 1
        self.answers.append((429, {"Retry-After": "3"}))
        self.assertEqual(self.f.report_demand(), 429)
        self.add(b"k", 2, 0)
        self.clock.t += 1
        self.assertIsNone(self.f.report_demand())  # within Retry-After: not sent
        self.clock.t += 2
        self.assertEqual(self.f.report_demand(), 204)
        self.assertEqual(len(self.bodies), 2)
        last = self.bodies[-1]
        # Both intervals' counts, over both intervals' time.
        self.assertEqual(last["keys"], [{"key_b64": base64.b64encode(b"k").decode(),
                                         "reads": 7, "writes": 1}])
        self.assertEqual(last["interval_seconds"], 4.0)
        self.assertEqual((self.stats["demand_reports"], self.stats["demand_errors"]), (1, 1))

    def test_counts_older_than_sixty_seconds_are_dropped(self):
        self.add(b"k", 5, 0)
        self.clock.t += 1
        self.answers.append((500, {}))
        self.f.report_demand()          # refused: its counts are dropped, not retried
        self.add(b"k", 1, 0)
        self.f._port = 1                # now unreachable: the counts are kept...
        self.clock.t += 30
        self.assertIsNone(self.f.report_demand())
        self.clock.t += 31              # ... until they are 61 s old
        self.assertIsNone(self.f.report_demand())
        self.assertEqual(self.stats["demand_keys_dropped"], 1)
        self.assertEqual(len(self.bodies), 1)

    def test_a_404_stops_reports_and_a_body_keeps_the_busiest_keys_within_bounds(self):
        for i in range(1500):
            self.add(b"key:%04d" % i, i, 0)
        self.clock.t += 1
        self.assertEqual(self.f.report_demand(), 204)
        body = self.bodies[-1]
        self.assertEqual(len(body["keys"]), 1024)
        self.assertEqual(min(k["reads"] for k in body["keys"]), 1500 - 1024)
        self.assertLessEqual(len(json.dumps(body)), 256 * 1024)
        self.assertEqual(self.stats["demand_keys_dropped"], 1500 - 1024)
        self.answers.append((404, {}))
        self.add(b"k", 1, 0)
        self.clock.t += 1
        self.assertEqual(self.f.report_demand(), 404)
        self.add(b"k", 1, 0)
        self.clock.t += 1
        self.assertIsNone(self.f.report_demand())
        self.assertEqual(len(self.bodies), 2)
