"""fixtures.py: what the kit's tests share.

RedisServer  a real redis-server on a free loopback port (no persistence), stopped by stop();
             the calling test is skipped, with the reason, when redis-server is not installed.
RedisCluster three of them as a Redis Cluster.
FeedServer   a small HTTP server that speaks the feed protocol (docs/feed.md): GET
             /api/v1/hotkeys and the SSE stream, which the test can partition away. It is a
             protocol fixture for the kit, not a stand-in for Redis; hotkeyd's own feed is
             tested end to end with the daemon in its own tests.
wait_until   a bounded wait for a condition.
"""

import base64
import http.server
import json
import os
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import redis


def wait_until(cond, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need_redis_server():
    """Skips the calling test (class) when there is no redis-server to run."""
    if not shutil.which("redis-server"):
        raise unittest.SkipTest("redis-server is not installed (tools/install-test-deps.sh "
                                "installs Debian's redis-server)")


class RedisServer:
    def __init__(self, *config, port=None):
        need_redis_server()
        self.dir = tempfile.mkdtemp(prefix="hotkeyd-kit-")
        self.port = port or free_port()
        self.log = os.path.join(self.dir, "redis.log")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--loglevel", "warning",
             "--logfile", self.log, *config])
        wait_until(self._ready, 10, f"redis-server on port {self.port}")

    def _ready(self):
        if self.proc.poll() is not None:
            with open(self.log) as f:
                raise AssertionError(f"redis-server exited with {self.proc.returncode}: "
                                     f"{f.read()[-2000:]}")
        try:
            return self.client().ping()
        except redis.exceptions.ConnectionError:
            return False

    def client(self, cls=redis.Redis, **kw):
        return cls(host="127.0.0.1", port=self.port, socket_timeout=10, **kw)

    def calls(self, command):
        """Calls of `command` so far, from INFO commandstats (0 when never called)."""
        info = self.client().info("commandstats")
        return int(info.get(f"cmdstat_{command}", {}).get("calls", 0))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def entry(key, mode, *, refresh=1.0, split=4, match="key", with_key=True):
    """An entry object with the fields hotkeyd sends for `mode` (test_contract.py checks
    that they are those of the recorded transcripts)."""
    raw = key if isinstance(key, bytes) else key.encode()
    e = {"label": raw.decode("utf-8", "replace"), "mode": mode, "share": 0.3,
         "write_ratio": 0.1, "origin": "advice", "match": match}
    if mode in ("cache", "split_cache"):
        e["refresh_seconds"] = refresh
    if mode in ("split", "split_cache"):
        e["split_factor"] = split
    if with_key:
        e["key_b64"] = base64.b64encode(raw).decode()
        try:
            e["key"] = raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return e


class FeedServer:
    """The feed's side of the protocol. Thread-safe; every change emits one event."""

    def __init__(self, lease=10.0, heartbeat=0.2, auth=None):
        # auth=(user, password): as hotkeyd with --key.label=hash and basic_auth_users, raw
        # keys (key_b64, key) go only to requests that pass basic auth.
        self.auth = None if auth is None else "Basic " + base64.b64encode(
            f"{auth[0]}:{auth[1]}".encode()).decode()
        self.lease = lease
        self.heartbeat = heartbeat
        self.version = 1
        self.entries = {}            # label -> entry object
        # Cleared: hotkeyd is partitioned away. Open streams get no heartbeats and new
        # requests no answer until it is set again.
        self.reachable = threading.Event()
        self.reachable.set()
        self.streams_served = 0
        self.demand = []             # (path, content type, body) of each demand report
        self._lock = threading.Lock()
        self._subs = []
        self.port = free_port()
        self._server = None
        self.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def doc(self, authed=True):
        return {"version": self.version, "lease_seconds": self.lease,
                "heartbeat_seconds": self.heartbeat,
                "entries": [self._shown(e, authed) for e in self.entries.values()]}

    def _shown(self, data, authed):
        if authed or self.auth is None:
            return data
        data = dict(data)
        if "entry" in data:
            data["entry"] = self._shown(data["entry"], authed)
        data.pop("key_b64", None)
        data.pop("key", None)
        return data

    def _emit(self, event, data):
        for q, authed in self._subs:
            shown = json.dumps(self._shown(data, authed))
            q.put(f"id: {data['version']}\nevent: {event}\ndata: {shown}\n\n")

    def put(self, e):
        with self._lock:
            kind = "change" if e["label"] in self.entries else "add"
            self.entries[e["label"]] = e
            self.version += 1
            self._emit(kind, {"version": self.version, "entry": e})

    def remove(self, label):
        with self._lock:
            e = self.entries.pop(label)
            self.version += 1
            data = {"version": self.version, "label": label}
            if "key_b64" in e:
                data["key_b64"] = e["key_b64"]
            self._emit("remove", data)

    def put_silently(self, e):
        """Changes the set without an event: the next event shows subscribers a gap."""
        with self._lock:
            self.entries[e["label"]] = e
            self.version += 1

    def start(self):
        fixture = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                fixture.reachable.wait()
                self.authed = self.headers.get("Authorization") == fixture.auth
                if self.path == "/api/v1/hotkeys":
                    with fixture._lock:
                        body = json.dumps(fixture.doc(self.authed)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                elif self.path == "/api/v1/hotkeys/stream":
                    self._stream()
                else:
                    self.send_error(404)

            def do_POST(self):
                # The demand report (docs/feed.md, "Demand a kit absorbs"): kept, 204.
                fixture.reachable.wait()
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with fixture._lock:
                    fixture.demand.append((self.path, self.headers.get("Content-Type"),
                                           json.loads(body)))
                self.send_response(204)
                self.end_headers()

            def _stream(self):
                q = queue.Queue()
                sub = (q, self.authed)
                with fixture._lock:
                    snap = json.dumps(fixture.doc(self.authed))
                    version = fixture.version
                    fixture._subs.append(sub)
                    fixture.streams_served += 1
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    self.wfile.write(f"id: {version}\nevent: snapshot\ndata: {snap}\n\n".encode())
                    self.wfile.flush()
                    while True:
                        try:
                            item = q.get(timeout=fixture.heartbeat)
                        except queue.Empty:
                            if not fixture.reachable.is_set():
                                continue
                            with fixture._lock:
                                v = fixture.version
                            beat = json.dumps({"version": v})
                            item = f"id: {v}\nevent: heartbeat\ndata: {beat}\n\n"
                        if item is None:
                            return
                        self.wfile.write(item.encode())
                        self.wfile.flush()
                except OSError:
                    pass
                finally:
                    with fixture._lock:
                        if sub in fixture._subs:
                            fixture._subs.remove(sub)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self):
        """Closes the listener and every open stream."""
        self.reachable.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            for q, _ in self._subs:
                q.put(None)
        wait_until(lambda: not self._subs, 10, "the feed's streams to close")


class RedisCluster:
    """A real three-primary Redis Cluster on free loopback ports (no replicas)."""

    def __init__(self, primaries=3):
        self.servers = []
        try:
            for _ in range(primaries):
                self.servers.append(RedisServer("--cluster-enabled", "yes",
                                                "--cluster-config-file", "nodes.conf",
                                                port=self._port()))
            subprocess.run(["redis-cli", "--cluster", "create",
                            *[f"127.0.0.1:{s.port}" for s in self.servers], "--cluster-yes"],
                           check=True, capture_output=True, timeout=60)
            wait_until(self._ok, 30, "cluster_state:ok")
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _port():
        """A free port whose cluster bus port (port + 10000) is free too."""
        for _ in range(100):
            p = free_port()
            if p + 10000 > 65535:
                continue
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p + 10000))
                except OSError:
                    continue
            return p
        raise RuntimeError("no free port pair for a cluster node")

    def _ok(self):
        try:
            return all(s.client().cluster("info")["cluster_state"] == "ok"
                       for s in self.servers)
        except redis.exceptions.RedisError:
            return False

    def client(self, **kw):
        return redis.RedisCluster(host="127.0.0.1", port=self.servers[0].port, **kw)

    def stop(self):
        for s in self.servers:
            s.stop()
