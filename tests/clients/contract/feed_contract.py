#!/usr/bin/env python3
"""feed_contract.py: the hot-key feed's contract with the client kits, recorded from a real
hotkeyd and compared with the transcripts committed under feed/.

Each transcript is the raw bytes of one HTTP answer (status line, head, body) as hotkeyd
sent it, after normalize() (below). The client kits replay the committed files in their own
tests (clients/python/tests/test_contract.py serves them from a local HTTP server), so a
change of the daemon's feed that a kit does not follow fails this test until the
transcripts are re-recorded, and then the kit's replay test until the kit follows.

Transcripts (feed/<name>.http; feed/README.md says which request gives each):
  set               GET /api/v1/hotkeys with a pin of every mode (and a prefix pin)
  stream            the stream: snapshot, heartbeat, then one reload's remove, change and
                    add events, then a heartbeat at the new version
  set-after         GET /api/v1/hotkeys after that reload: the set the stream leads to
  restart-1         a stream cut by hotkeyd's shutdown (snapshot, heartbeat, end of body)
  restart-2         the stream of the restarted hotkeyd on the same port: versions start over
  unauthorized      401: basic auth on, no credentials
  not-found         404: a wrong path (a feed URL with a typo)
  too-many-subscribers   503 with Retry-After: --feed.max-subscribers taken
  busy              429 with Retry-After: basic auth whose password checks are all taken
  demand-accepted   204: POST /api/v1/hotkeys/demand (docs/feed.md, "Demand a kit
                    absorbs"), recorded once the daemon serves it (skipped with a note
                    while it answers 404)

Advised entries (origin advice) vary from run to run (their figures and fixes): they are not
kept as a transcript; check_advised() checks that each carries the fields of the recorded
pinned entry of its mode.

normalize() replaces what varies between runs and nothing else: the Date header's value,
the number of seconds in Retry-After (it is the time the queued checks take), and a run of
heartbeats at one version, which it keeps as one (their count depends on timing).

Usage:
  feed_contract.py HOTKEYD            record and compare (the ctest test clients_feed_contract)
  feed_contract.py HOTKEYD --record   record and overwrite the committed transcripts; review
                                      the diff (git diff tests/clients/contract/feed) and
                                      commit it with the kit's change that follows it
"""

import base64
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import hotkeyd_e2e as e2e  # noqa: E402
from hotkeyd_e2e import Hotkeyd, Workdir, check, log, wait_until  # noqa: E402

FEED = os.path.join(HERE, "feed")
# Recorded once the daemon serves it (the demand endpoint, landing with issue 33's part 3):
# until its transcript is committed, a recording of it is reported, not a failure.
PENDING = {"demand-accepted"}
PASSWORD = "contract-password"
LEASE = 5  # seconds: heartbeats every second

# Every mode once, a hash-tagged split key, a key beyond ASCII and a prefix pin.
PINS_BEFORE = [
    ("key", "page:home", "cache"),
    ("key", "catalog:menu", "replicate"),
    ("key", "post:viral:likes", "split"),
    ("key", "{user:42}:visits", "split"),
    ("key", "item:flash:stock", "split_cache"),
    ("key", "tenant:acme", "isolate"),
    ("key", "user:zoë", "cache"),
    ("prefix", "flash:", "cache"),
]
# The reload: tenant:acme leaves (remove), page:home turns split_cache (change),
# feed:new arrives as replicate (add).
PINS_AFTER = [p for p in PINS_BEFORE if p[1] not in ("tenant:acme", "page:home")] + [
    ("key", "page:home", "split_cache"),
    ("key", "feed:new", "replicate"),
]


def rules(pins):
    lines = ["feed:", f"  lease: {LEASE}s", "  refresh: 1s", "  split_factor: 4", "  pin:"]
    for match, key, mode in pins:
        lines.append(f'    - {match}: "{key}"')
        lines.append(f"      mode: {mode}")
    return "\n".join(lines) + "\n"


def write(work, name, text):
    path = work.file(name)
    with open(path, "w") as f:
        f.write(text)
    return path


# ------------------------------------------------------------------------------ capture

class Raw:
    """One request on its own socket; every byte of the answer kept, read on a thread."""

    def __init__(self, port, method, path, headers=(), body=b""):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers]
        if body:
            head.append(f"Content-Length: {len(body)}")
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        self.data = b""
        self.closed = False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                with self.lock:
                    self.data += chunk
        except OSError:
            pass
        self.closed = True

    def bytes(self):
        with self.lock:
            return self.data

    def status(self):
        m = re.match(rb"HTTP/1\.1 (\d+)", self.bytes())
        return int(m.group(1)) if m else None

    def events(self):
        """(type, data dict) of every complete event in the body so far."""
        _, _, body = self.bytes().partition(b"\r\n\r\n")
        out = []
        for block in body.split(b"\n\n")[:-1]:
            kind = data = None
            for line in block.split(b"\n"):
                if line.startswith(b"event: "):
                    kind = line[7:].decode()
                elif line.startswith(b"data: "):
                    data = json.loads(line[6:])
            out.append((kind, data))
        return out

    def wait_events(self, pred, what, timeout=20):
        return wait_until(lambda: pred(self.events()), timeout, what)

    def finish(self, timeout=15):
        """Waits for the server to close (an answer with a length or Connection: close)."""
        self.thread.join(timeout)
        check(self.closed, "the answer ended")
        self.sock.close()
        return self.bytes()

    def cut(self):
        """Closes our side of a stream and returns what arrived."""
        data = self.bytes()
        self.sock.close()
        self.thread.join(5)
        return data


def heartbeats_after(events, version, n=1):
    return sum(1 for k, d in events if k == "heartbeat" and d["version"] == version) >= n


# ------------------------------------------------------------------------------ normalize

def normalize(raw):
    head, sep, body = raw.partition(b"\r\n\r\n")
    head = re.sub(rb"\r\nDate: [^\r]*", b"\r\nDate: <date>", head)
    head = re.sub(rb"\r\nRetry-After: \d+", b"\r\nRetry-After: 1", head)
    if b"text/event-stream" in head:
        blocks = body.split(b"\n\n")
        kept, last = [], None
        for b in blocks[:-1]:
            if b.startswith(b"event: heartbeat") and b == last:
                continue
            kept.append(b)
            last = b
        body = b"".join(k + b"\n\n" for k in kept) + blocks[-1]
    return head + sep + body


# ------------------------------------------------------------------------------ scenarios

def hotkeyd(binary, work, *flags):
    # UDP on (Hotkeyd's port): an event source is required, and nothing is sent to it.
    return Hotkeyd(binary, "--web.enable-lifecycle", *flags, work=work)


class Restarted(Hotkeyd):
    """A hotkeyd on the web port of one that stopped (a restart on the same address)."""

    def __init__(self, binary, port, *flags, work):  # pylint: disable=super-init-not-called
        self.binary, self.web, self.udp = binary, port, e2e.free_udp_port()
        self.log_path = work.file("hotkeyd-restarted.log")
        self.flags = [f"--web.listen-address=127.0.0.1:{port}",
                      f"--udp.listen-address=127.0.0.1:{self.udp}",
                      "--web.enable-lifecycle", *e2e.KEEP_USER, *flags]
        self.proc = e2e.Procs.start([binary, *self.flags], self.log_path)
        wait_until(self._ready, 15, f"the restarted hotkeyd /-/ready on port {port}")


def wait_set(d, count, what):
    def ok():
        st, body = d.get("/api/v1/hotkeys")
        return st == 200 and len(json.loads(body)["entries"]) == count
    wait_until(ok, 20, what)


def reload(d):
    conn = http.client.HTTPConnection("127.0.0.1", d.web, timeout=10)
    conn.request("POST", "/-/reload")
    status = conn.getresponse().status
    conn.close()
    check(status == 200, f"reload answers 200 (got {status})")


def record(binary, work):
    out = {}
    path = write(work, "rules.yml", rules(PINS_BEFORE))
    d = hotkeyd(binary, work, f"--config.file={path}")
    wait_set(d, len(PINS_BEFORE), "every pin in the set")
    s = Raw(d.web, "GET", "/api/v1/hotkeys")
    out["set"] = s.finish()

    st = Raw(d.web, "GET", "/api/v1/hotkeys/stream")
    snap = st.wait_events(lambda ev: ev and ev[0][0] == "snapshot", "the snapshot")
    v0 = st.events()[0][1]["version"]
    st.wait_events(lambda ev: heartbeats_after(ev, v0), "a heartbeat at the snapshot's version")
    write(work, "rules.yml", rules(PINS_AFTER))
    reload(d)
    v1 = v0 + 3
    st.wait_events(lambda ev: heartbeats_after(ev, v1), "the reload's events and a heartbeat")
    out["stream"] = st.cut()
    del snap
    out["set-after"] = Raw(d.web, "GET", "/api/v1/hotkeys").finish()
    out["not-found"] = Raw(d.web, "GET", "/api/v1/hotkey/stream").finish()

    # The demand report, once the daemon serves it: one report for a key in the set.
    body = json.dumps({"interval_seconds": 1.0, "keys": [
        {"key_b64": base64.b64encode(b"page:home").decode(), "reads": 10, "writes": 0}]})
    dm = Raw(d.web, "POST", "/api/v1/hotkeys/demand",
             ["Content-Type: application/json"], body.encode()).finish()
    if re.match(rb"HTTP/1\.1 404", dm):
        log("  note: POST /api/v1/hotkeys/demand answers 404: not recorded yet")
    else:
        out["demand-accepted"] = dm

    # A restart: the stream ends with the daemon, the next one starts over.
    st = Raw(d.web, "GET", "/api/v1/hotkeys/stream")
    st.wait_events(lambda ev: heartbeats_after(ev, v1), "a heartbeat before the restart")
    port = d.web
    d.stop()
    out["restart-1"] = st.finish()
    d = Restarted(binary, port, f"--config.file={path}", work=work)
    wait_set(d, len(PINS_AFTER), "every pin in the restarted daemon's set")
    st = Raw(d.web, "GET", "/api/v1/hotkeys/stream")
    st.wait_events(lambda ev: ev and heartbeats_after(ev, ev[0][1]["version"]),
                   "the restarted daemon's snapshot and a heartbeat")
    out["restart-2"] = st.cut()
    d.stop()

    # --feed.max-subscribers taken: 503.
    d = hotkeyd(binary, work, f"--config.file={path}", "--feed.max-subscribers=1")
    first = Raw(d.web, "GET", "/api/v1/hotkeys/stream")
    first.wait_events(lambda ev: ev, "the first subscriber's snapshot")
    out["too-many-subscribers"] = Raw(d.web, "GET", "/api/v1/hotkeys/stream").finish()
    first.cut()
    d.stop()

    # Basic auth: 401 without credentials; 429 when the password checks are all taken.
    pw_hash = subprocess.run(["htpasswd", "-nbBC", "12", "u", PASSWORD], check=True,
                             capture_output=True, text=True).stdout.strip().split(":", 1)[1]
    web = write(work, "web.yml", f"basic_auth_users:\n  u: '{pw_hash}'\n")
    d = hotkeyd(binary, work, f"--config.file={path}", f"--web.config.file={web}",
                "--web.health-without-auth")
    out["unauthorized"] = Raw(d.web, "GET", "/api/v1/hotkeys/stream").finish()
    busy = None
    for attempt in range(5):
        # Each request carries credentials never verified before: a bcrypt each, queued.
        flood = [Raw(d.web, "GET", "/api/v1/hotkeys/stream",
                     ["Authorization: Basic " + base64.b64encode(
                         f"u:wrong-{attempt}-{i}".encode()).decode()])
                 for i in range(40)]
        for r in flood:
            r.thread.join(60)
        busy = next((r.bytes() for r in flood if r.status() == 429), None)
        for r in flood:
            r.sock.close()
        if busy:
            break
    check(busy is not None, "a 429 among 40 unverified logins at once")
    out["busy"] = busy
    d.stop()
    return {name: normalize(raw) for name, raw in out.items()}


def check_advised(binary, work, recorded_set):
    """Advised entries (origin advice, from hotkeyd --demo's hot keys) carry the fields of the
    recorded pinned entry of their mode. Their figures and fixes vary from run to run, so
    they are checked here field by field rather than kept as a transcript."""
    pinned = json.loads(recorded_set.partition(b"\r\n\r\n")[2])["entries"]
    fields = {e["mode"]: set(e) for e in pinned if e["match"] == "key"}
    d = Hotkeyd(binary, "--demo", "--track.rate-window=1s", work=work)

    def advised():
        st, body = d.get("/api/v1/hotkeys")
        got = [e for e in json.loads(body)["entries"] if e["origin"] == "advice"]
        return got if st == 200 and got else None
    entries = wait_until(advised, 30, "an advised entry from the demo's hot keys")
    for e in entries:
        check(set(e) == fields[e["mode"]],
              f"advised {e['mode']} entry {e['label']} has the pinned entry's fields")
    d.stop()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary, rerecord = sys.argv[1], "--record" in sys.argv[2:]
    work = Workdir("feed-contract")
    ok = False
    try:
        got = record(binary, work)
        check_advised(binary, work, got["set"])
        if rerecord:
            os.makedirs(FEED, exist_ok=True)
            for name, data in got.items():
                with open(os.path.join(FEED, name + ".http"), "wb") as f:
                    f.write(data)
            log(f"recorded {len(got)} transcripts in {FEED}")
            ok = True
            return
        failed = []
        for name, data in sorted(got.items()):
            path = os.path.join(FEED, name + ".http")
            try:
                with open(path, "rb") as f:
                    want = f.read()
            except FileNotFoundError:
                if name in PENDING:
                    log(f"  note: {name} recorded but not committed yet: --record, review, "
                        "commit it")
                else:
                    failed.append(f"{name}: recorded, but no committed transcript {path}")
                continue
            if data != want:
                failed.append(f"{name}: differs from {path}\n--- committed\n"
                              f"{want.decode(errors='replace')}\n--- recorded\n"
                              f"{data.decode(errors='replace')}")
            else:
                log(f"  ok: {name} matches {os.path.relpath(path, HERE)}")
        if failed:
            for f in failed:
                log("FAIL: " + f)
            log("If the change is meant: feed_contract.py HOTKEYD --record, review the diff, "
                "and make the kits follow (their replay tests read these files).")
            sys.exit(1)
        ok = True
        log("PASS")
    finally:
        e2e.Procs.stop_all()
        work.finish(ok)


if __name__ == "__main__":
    main()
