"""feed.py: follows hotkeyd's hot-key feed (docs/feed.md) and keeps the set of live entries.

The feed is Server-Sent Events on GET /api/v1/hotkeys/stream: a snapshot, then add, change
and remove events and heartbeats, each carrying the set's version. FeedFollower reads it on
one background thread, reconnecting with jittered exponential backoff (0.5 s doubling to
30 s) and refetching GET /api/v1/hotkeys when it sees a version gap.

Leases: an entry is live for lease_seconds after the follower last received it (snapshot,
add, change) or a heartbeat at the version the follower holds. Each entry carries the lease
of the feed it came from (Entry.lease, set when it is received), so a client that follows
several feeds holds each entry to its own feed's lease. The follower never trusts
the server's clock; it stamps entries with its own monotonic clock on receipt. Expired
entries are dropped by expire(), which the owner calls periodically; lookups check the
lease themselves (FeedState.live), so a stalled sweeper never extends a lease.

Thread safety: the table is published as an immutable FeedState, replaced whole under a
lock by the follower and expire(); readers take `follower.state` without locking. After
each publication the follower calls its owner's `on_publish()` (still under that lock), so
an owner that merges several followers' tables republishes the union then.
"""

import base64
import binascii
import http.client
import json
import logging
import random
import ssl
import threading
import time
import urllib.parse

from .naming import sub_key_names

log = logging.getLogger("hotkeyd_client")

MODES = frozenset({"cache", "replicate", "split", "split_cache", "isolate"})
SPLIT_MODES = frozenset({"split", "split_cache"})
CACHE_MODES = frozenset({"cache", "replicate"})


class Entry:
    """One feed entry as the kit acts on it. Immutable once published, except `renewed`
    and `lease` (set at each renewal) and the split bookkeeping (guarded by `cond`)."""

    __slots__ = ("key", "mode", "refresh", "split_factor", "prefix", "label", "renewed",
                 "lease", "sub_keys", "parts", "cond", "inflight", "retired")

    def __init__(self, key, mode, refresh, split_factor, prefix, label, renewed, lease=0.0):
        self.key = key                    # bytes
        self.mode = mode                  # one of MODES
        self.refresh = refresh            # seconds (cache, replicate, split_cache)
        self.split_factor = split_factor  # S >= 2 (split, split_cache), else 0
        self.prefix = prefix              # True: every key starting with `key`
        self.label = label
        self.renewed = renewed            # monotonic receive time of the last renewal
        self.lease = lease                # seconds: its feed's lease_seconds
        self.sub_keys = ()                # split modes: parts 1..S-1 (naming.sub_key_names)
        self.parts = ()                   # split modes: (key, *sub_keys), the S parts
        self.cond = threading.Condition()
        self.inflight = 0                 # split writes between choosing and finishing
        self.retired = False              # no new split writes; fold pending or done

    def same_fix(self, other):
        """True when `other` asks for the same fix (a renewal, not a change of plan)."""
        return (self.mode == other.mode and self.split_factor == other.split_factor
                and self.prefix == other.prefix and self.refresh == other.refresh)

    def same_parts(self, other):
        """True when both split the key into the same parts (split and split_cache with the
        same names): the counter stays where it is, and there is nothing to fold."""
        return bool(self.sub_keys) and self.sub_keys == other.sub_keys


def parse_entry(obj, now, lease=0.0, namer=sub_key_names):
    """An Entry from the feed's entry object, or None when the kit cannot act on it
    (no key_b64: the caller may not see raw keys). Raises ValueError when malformed.
    `namer(key, S)` gives a split entry's sub-key names, computed once here: they stay
    fixed for the entry's life."""
    if not isinstance(obj, dict):
        raise ValueError("entry is not an object")
    b64 = obj.get("key_b64")
    if b64 is None:
        return None
    try:
        key = base64.b64decode(b64, validate=True)
    except (binascii.Error, TypeError) as e:
        raise ValueError(f"bad key_b64: {e}") from None
    mode = obj.get("mode")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    refresh = obj.get("refresh_seconds", 1.0)
    if not isinstance(refresh, (int, float)) or isinstance(refresh, bool) or not refresh > 0:
        raise ValueError(f"bad refresh_seconds {refresh!r}")
    split = 0
    if mode in SPLIT_MODES:
        split = obj.get("split_factor")
        if not isinstance(split, int) or isinstance(split, bool) or not 2 <= split <= 1024:
            raise ValueError(f"bad split_factor {split!r}")
    match = obj.get("match", "key")
    if match not in ("key", "prefix"):
        raise ValueError(f"unknown match {match!r}")
    if split and match == "prefix":
        raise ValueError("split modes need match: key")
    e = Entry(key, mode, float(refresh), split, match == "prefix", obj.get("label"), now,
              lease)
    if split:
        e.sub_keys = tuple(namer(key, split))
        e.parts = (key,) + e.sub_keys
    return e


class FeedState:
    """An immutable view of the live entries. `active` is False when there are none, so a
    call for a key that is not hot costs one attribute read while the feed is empty."""

    __slots__ = ("exact", "prefixes", "_starts", "active")

    def __init__(self, exact, prefixes):
        self.exact = exact          # {key bytes: Entry}
        self.prefixes = prefixes    # (Entry, ...) with prefix=True, longest first
        self._starts = tuple(p.key for p in prefixes)  # one startswith() call tests all
        self.active = bool(exact or prefixes)

    @classmethod
    def merged(cls, states):
        """The union of several followers' tables. Where two name the same key (or the
        same prefix), the entry of the earlier state in `states` is kept."""
        exact, prefixes, seen = {}, [], set()
        for st in reversed(states):
            exact.update(st.exact)
        for st in states:
            for p in st.prefixes:
                if p.key not in seen:
                    seen.add(p.key)
                    prefixes.append(p)
        return cls(exact, tuple(sorted(prefixes, key=lambda e: -len(e.key))))

    def find(self, key):
        """The entry for `key` (bytes), or None: an exact entry first, then the longest
        matching prefix. The caller checks the lease (live(e, now))."""
        e = self.exact.get(key)
        if e is None and self._starts and key.startswith(self._starts):
            for p in self.prefixes:
                if key.startswith(p.key):
                    return p
        return e

    @staticmethod
    def live(e, now):
        return now - e.renewed <= e.lease

    def entries(self):
        return list(self.exact.values()) + list(self.prefixes)


EMPTY = FeedState({}, ())


class SseParser:
    """Incremental text/event-stream parser (WHATWG HTML, "server-sent events"): feed it
    lines; it returns (event, data, id) at each blank line that ends an event."""

    def __init__(self):
        self._event = ""
        self._data = []
        self._id = None

    def line(self, text):
        text = text.rstrip("\r\n")
        if not text:
            if not self._data and not self._event:
                return None
            out = (self._event or "message", "\n".join(self._data), self._id)
            self._event, self._data = "", []
            return out
        if text.startswith(":"):
            return None
        name, sep, value = text.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        return None


class FeedGap(Exception):
    """The stream skipped a version: the set must be refetched."""


class FeedFollower:
    """Follows one hotkeyd feed on a daemon thread. `on_retire(entry, expired=False)` is
    called for every entry that leaves the set (removed, expired, or replaced by a different
    fix), under the table lock and before the new table is published, so that an owner
    which records the entry there never has a moment in which the key is in neither place;
    it must not block. `on_publish()` is called under the same lock after each new table
    is published; it must not block either. `namer(key, S)` names a split entry's sub-keys
    (naming.sub_key_names by default). `stats` is the owner's counter dict, updated under
    `stats_lock`."""

    BACKOFF_INITIAL = 0.5
    BACKOFF_MAX = 30.0

    def __init__(self, url, *, on_retire, stats, stats_lock, on_publish=None, namer=None,
                 auth=None, ssl_context=None, connect_timeout=5.0, clock=time.monotonic,
                 rng=None):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https"):
            raise ValueError(f"feed_url must be http(s): {url!r}")
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port
        base = u.path.rstrip("/")
        # The URL may name the server ("http://h:10110"), the set or the stream.
        for suffix in ("/api/v1/hotkeys/stream", "/api/v1/hotkeys"):
            if base.endswith(suffix):
                base = base[: -len(suffix)]
        self._set_path = base + "/api/v1/hotkeys"
        self._stream_path = self._set_path + "/stream"
        self._headers = {}
        if auth is not None:
            user, password = auth
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self._headers["Authorization"] = "Basic " + token
        self._ssl = ssl_context
        self._connect_timeout = connect_timeout
        self._clock = clock
        self._rng = rng or random.Random()
        self._on_retire = on_retire
        self._on_publish = on_publish
        self._namer = namer or sub_key_names
        self._lease = 0.0               # the lease_seconds of the last snapshot
        self._stats = stats
        self._stats_lock = stats_lock
        self._lock = threading.Lock()  # serialises changes of `state`
        self.state = EMPTY
        self.version = None
        self.connected = threading.Event()  # set while a stream is open and synced
        self._stop = threading.Event()
        self._conn = None
        self._warned = set()
        self._thread = threading.Thread(target=self._run, name="hotkeyd-feed", daemon=True)

    # ------------------------------------------------------------------ life cycle

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        conn = self._conn
        if conn is not None:
            try:
                conn.sock and conn.sock.shutdown(2)
            except OSError:
                pass
        self._thread.join(5)

    # ------------------------------------------------------------------ table

    def expire(self):
        """Drops entries whose lease has run out; returns them (already retired)."""
        now = self._clock()
        with self._lock:
            st = self.state
            dead = [e for e in st.entries() if now - e.renewed > e.lease]
            if not dead:
                return []
            gone = {id(e) for e in dead}
            for e in dead:
                self._on_retire(e, expired=True)
            self._publish({k: e for k, e in st.exact.items() if id(e) not in gone},
                          [e for e in st.prefixes if id(e) not in gone])
        return dead

    def _publish(self, exact, prefixes):
        prefixes = tuple(sorted(prefixes, key=lambda e: -len(e.key)))
        self.state = FeedState(exact, prefixes)
        if self._on_publish is not None:
            self._on_publish()

    def _count(self, name, n=1):
        with self._stats_lock:
            self._stats[name] += n

    def _warn_once(self, what, msg):
        if what not in self._warned:
            self._warned.add(what)
            log.warning("%s", msg)

    def _parse_entries(self, objs, now, lease):
        out = []
        for obj in objs:
            try:
                e = parse_entry(obj, now, lease, self._namer)
            except ValueError as err:
                self._count("ignored_entries")
                self._warn_once("malformed", f"hotkeyd feed: ignoring a malformed entry: {err}")
                continue
            if e is None:
                self._count("ignored_entries")
                self._warn_once("no_key", "hotkeyd feed: entries carry no key_b64 (the feed "
                                "sends raw keys only to authenticated callers); ignoring them")
                continue
            out.append(e)
        return out

    def _apply_snapshot(self, doc):
        now = self._clock()
        version = doc["version"]
        lease = float(doc["lease_seconds"])
        fresh = self._parse_entries(doc.get("entries", []), now, lease)
        retired = []
        with self._lock:
            old = {(e.key, e.prefix): e for e in self.state.entries()}
            exact, prefixes = {}, []
            for e in fresh:
                prev = old.pop((e.key, e.prefix), None)
                if prev is not None and prev.same_fix(e):
                    prev.renewed, prev.lease = now, lease
                    e = prev
                elif prev is not None and not prev.same_parts(e):
                    retired.append(prev)
                (prefixes.append(e) if e.prefix else exact.__setitem__(e.key, e))
            retired.extend(old.values())
            for e in retired:
                self._on_retire(e)
            self._lease = lease
            self._publish(exact, prefixes)
            self.version = version

    def _apply_entry(self, obj):
        now = self._clock()
        fresh = self._parse_entries([obj], now, self._lease)
        if not fresh:
            return
        e = fresh[0]
        with self._lock:
            st = self.state
            exact, prefixes = dict(st.exact), list(st.prefixes)
            prev = None
            if e.prefix:
                for i, p in enumerate(prefixes):
                    if p.key == e.key:
                        prev = prefixes.pop(i)
                        break
            else:
                prev = exact.pop(e.key, None)
            if prev is not None and prev.same_fix(e):
                prev.renewed = now
                e, prev = prev, None
            (prefixes.append(e) if e.prefix else exact.__setitem__(e.key, e))
            if prev is not None and not prev.same_parts(e):
                self._on_retire(prev)
            self._publish(exact, prefixes)

    def _apply_remove(self, obj):
        b64 = obj.get("key_b64")
        if b64 is None:
            return
        try:
            key = base64.b64decode(b64, validate=True)
        except (binascii.Error, TypeError):
            self._count("ignored_entries")
            return
        with self._lock:
            st = self.state
            exact = dict(st.exact)
            gone = [e for e in st.prefixes if e.key == key]
            prefixes = [e for e in st.prefixes if e.key != key]
            if key in exact:
                gone.append(exact.pop(key))
            if not gone:
                return
            for e in gone:
                self._on_retire(e)
            self._publish(exact, prefixes)

    def _renew_all(self):
        now = self._clock()
        for e in self.state.entries():
            e.renewed = now

    # ------------------------------------------------------------------ protocol

    def _connect(self, timeout):
        if self._https:
            ctx = self._ssl or ssl.create_default_context()
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=ctx)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _refetch(self):
        conn = self._connect(self._connect_timeout)
        try:
            conn.request("GET", self._set_path, headers=self._headers)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise OSError(f"GET {self._set_path}: HTTP {resp.status}")
            self._apply_snapshot(json.loads(body))
        finally:
            conn.close()
        self._count("feed_resyncs")

    def _handle(self, event, data):
        if event not in ("snapshot", "add", "change", "remove", "heartbeat"):
            return  # unknown events are for newer clients
        doc = json.loads(data)
        self._count("feed_events")
        if event == "snapshot":
            self._apply_snapshot(doc)
            return
        version = doc["version"]
        if self.version is None:
            raise FeedGap()
        if event == "heartbeat":
            if version == self.version:
                self._renew_all()
            elif version > self.version:
                raise FeedGap()
            return
        if version <= self.version:
            return  # already in the set we hold (after a refetch)
        if version != self.version + 1:
            raise FeedGap()
        if event == "remove":
            self._apply_remove(doc)
        else:
            self._apply_entry(doc["entry"])
        self.version = version

    def _stream_once(self):
        """One connection: reads events until it fails or stop() is called. Returns True
        when a snapshot arrived (the backoff then restarts from its initial delay)."""
        conn = self._connect(self._connect_timeout)
        self._conn = conn
        synced = False
        try:
            conn.request("GET", self._stream_path,
                         headers={**self._headers, "Accept": "text/event-stream"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise OSError(f"GET {self._stream_path}: HTTP {resp.status}")
            parser = SseParser()
            while not self._stop.is_set():
                raw = resp.readline()
                if not raw:
                    raise OSError("feed closed the stream")
                ev = parser.line(raw.decode("utf-8", "replace"))
                if ev is None:
                    continue
                try:
                    self._handle(ev[0], ev[1])
                except FeedGap:
                    self._refetch()
                if ev[0] == "snapshot" and not synced:
                    synced = True
                    self.connected.set()
                    # Silence for three heartbeats (no heartbeat is sent) means the
                    # stream is dead even if TCP has not noticed.
                    hb = float(json.loads(ev[1]).get("heartbeat_seconds", 2))
                    if conn.sock is not None:
                        conn.sock.settimeout(max(3 * hb, 1.0))
        finally:
            self.connected.clear()
            self._conn = None
            conn.close()
        return synced

    def _run(self):
        delay = self.BACKOFF_INITIAL
        first = True
        while not self._stop.is_set():
            if not first:
                self._count("feed_reconnects")
            first = False
            try:
                if self._stream_once():
                    delay = self.BACKOFF_INITIAL
            except Exception as err:  # noqa: BLE001 (a bad feed must not end the thread)
                if not self._stop.is_set():
                    log.info("hotkeyd feed: %s: %s; reconnecting", type(err).__name__, err)
            # Jitter spreads the reconnects of many clients after a daemon restart.
            if self._stop.wait(self._rng.uniform(delay / 2, delay)):
                break
            delay = min(delay * 2, self.BACKOFF_MAX)
