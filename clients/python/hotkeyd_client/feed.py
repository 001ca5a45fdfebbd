"""feed.py: follows hotkeyd's hot-key feed (docs/feed.md) and keeps the set of live entries.

The feed is Server-Sent Events on GET /api/v1/hotkeys/stream: a snapshot, then add, change
and remove events and heartbeats, each carrying the set's version. FeedFollower reads it on
one background thread, reconnecting with jittered exponential backoff (0.5 s doubling to
30 s) and refetching GET /api/v1/hotkeys when it sees a version gap. A 429 or 503 waits at
least its Retry-After. A feed that cannot work as configured (401 or 403: credentials; 404:
no feed at that URL; a TLS failure) is logged at ERROR, shown in health(), raised by
HotkeyClient.wait_synced(), and retried only at the backoff's ceiling (BACKOFF_MAX,
jittered; the operator may fix the daemon's side).

Leases: an entry is live for lease_seconds after the follower last received it (snapshot,
add, change) or a heartbeat at the version the follower holds. Each entry carries the lease
of the feed it came from (Entry.lease, set when it is received), so a client that follows
several feeds holds each entry to its own feed's lease. The follower never trusts
the server's clock; it stamps entries with its own monotonic clock on receipt. Expired
entries are dropped by expire(), which the owner calls periodically; lookups check the
lease themselves (FeedState.live), so a stalled sweeper never extends a lease.

Demand (docs/feed.md, "Demand a kit absorbs"): each entry points at its feed's DemandLedger,
where the owner counts the reads it served from a copy and the writes it sent to sub-keys;
report_demand() posts them to the same hotkeyd at most once a second.

Thread safety: the table is published as an immutable FeedState, replaced whole under a
lock by the follower and expire(); readers take `follower.state` without locking. After
each publication the follower calls its owner's `on_publish()` (still under that lock), so
an owner that merges several followers' tables republishes the union then.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import email.utils
import http.client
import json
import logging
import random
import ssl
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .naming import sub_key_names

log = logging.getLogger("hotkeyd_client")

MODES = frozenset({"cache", "replicate", "split", "split_cache", "isolate"})
SPLIT_MODES = frozenset({"split", "split_cache"})
# The modes whose entries carry refresh_seconds (docs/feed.md): the local copy's bound.
REFRESH_MODES = frozenset({"cache", "split_cache"})

Namer = Callable[[bytes, int], Sequence[bytes]]


class Entry:
    """One feed entry as the kit acts on it. Immutable once published, except `renewed`
    and `lease` (set at each renewal) and the split bookkeeping (guarded by `cond`).
    Internal: HotkeyClient.entries() hands out EntryInfo copies."""

    __slots__ = ("key", "mode", "refresh", "split_factor", "prefix", "label", "renewed",
                 "lease", "sub_keys", "parts", "cond", "inflight", "retired", "ledger")

    def __init__(self, key: bytes, mode: str, refresh: float, split_factor: int,
                 prefix: bool, label: Optional[str], renewed: float, lease: float = 0.0):
        self.key = key                    # bytes
        self.mode = mode                  # one of MODES
        self.refresh = refresh            # seconds (cache, split_cache), else 0
        self.split_factor = split_factor  # S >= 2 (split, split_cache), else 0
        self.prefix = prefix              # True: every key starting with `key`
        self.label = label
        self.renewed = renewed            # monotonic receive time of the last renewal
        self.lease = lease                # seconds: its feed's lease_seconds
        self.sub_keys: Tuple[bytes, ...] = ()  # split modes: parts 1..S-1
        self.parts: Tuple[bytes, ...] = ()     # split modes: (key, *sub_keys), the S parts
        self.cond = threading.Condition()
        self.inflight = 0                 # split writes between choosing and finishing
        self.retired = False              # no new split writes; fold pending or done
        self.ledger: Optional[DemandLedger] = None  # its feed's demand counts

    def same_fix(self, other: "Entry") -> bool:
        """True when `other` asks for the same fix (a renewal, not a change of plan)."""
        return (self.mode == other.mode and self.split_factor == other.split_factor
                and self.prefix == other.prefix and self.refresh == other.refresh)

    def same_parts(self, other: "Entry") -> bool:
        """True when both split the key into the same parts (split and split_cache with the
        same names): the counter stays where it is, and there is nothing to fold."""
        return bool(self.sub_keys) and self.sub_keys == other.sub_keys


@dataclasses.dataclass(frozen=True)
class EntryInfo:
    """A copy of one entry the kit holds, for inspection (HotkeyClient.entries())."""

    key: bytes
    mode: str
    refresh_seconds: Optional[float]  # cache and split_cache only
    split_factor: Optional[int]       # split and split_cache only
    prefix: bool                      # True: every key that starts with `key`
    label: Optional[str]
    sub_keys: Tuple[bytes, ...]       # split modes: the names of parts 1..S-1
    parts: Tuple[bytes, ...]          # split modes: (key, *sub_keys), the S parts
    lease_seconds: float
    lease_left: float                 # seconds until the lease runs out (< 0: expired)
    feed_url: str                     # the feed it came from

    @classmethod
    def of(cls, e: Entry, now: float, feed_url: str) -> "EntryInfo":
        return cls(e.key, e.mode, e.refresh or None, e.split_factor or None, e.prefix,
                   e.label, e.sub_keys, e.parts, e.lease, e.renewed + e.lease - now, feed_url)


def parse_entry(obj: Any, now: float, lease: float = 0.0,
                namer: Namer = sub_key_names) -> Optional[Entry]:
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
    except (binascii.Error, TypeError) as err:
        raise ValueError(f"bad key_b64: {err}") from None
    mode = obj.get("mode")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    refresh = 0.0
    if mode in REFRESH_MODES:
        # No default: the daemon sends it for these modes, and a copy kept for a made-up
        # interval would break the staleness bound the operator set.
        r = obj.get("refresh_seconds")
        if not isinstance(r, (int, float)) or isinstance(r, bool) or not r > 0:
            raise ValueError(f"bad refresh_seconds {r!r} for mode {mode}")
        refresh = float(r)
    split = 0
    if mode in SPLIT_MODES:
        s = obj.get("split_factor")
        if not isinstance(s, int) or isinstance(s, bool) or not 2 <= s <= 1024:
            raise ValueError(f"bad split_factor {s!r}")
        split = s
    match = obj.get("match", "key")
    if match not in ("key", "prefix"):
        raise ValueError(f"unknown match {match!r}")
    if split and match == "prefix":
        raise ValueError("split modes need match: key")
    e = Entry(key, mode, refresh, split, match == "prefix", obj.get("label"), now, lease)
    if split:
        e.sub_keys = tuple(namer(key, split))
        e.parts = (key,) + e.sub_keys
    return e


class FeedState:
    """An immutable view of the live entries. `active` is False when there are none, so a
    call for a key that is not hot costs one attribute read while the feed is empty."""

    __slots__ = ("exact", "prefixes", "_starts", "active")

    def __init__(self, exact: Dict[bytes, Entry], prefixes: Sequence[Entry]):
        self.exact = exact          # {key bytes: Entry}
        self.prefixes = tuple(prefixes)  # prefix=True, longest first
        self._starts = tuple(p.key for p in self.prefixes)  # one startswith() tests all
        self.active = bool(exact or prefixes)

    @classmethod
    def merged(cls, states: Sequence["FeedState"]) -> "FeedState":
        """The union of several followers' tables. Where two name the same key (or the
        same prefix), the entry of the earlier state in `states` is kept."""
        exact: Dict[bytes, Entry] = {}
        prefixes: List[Entry] = []
        seen = set()
        for st in reversed(states):
            exact.update(st.exact)
        for st in states:
            for p in st.prefixes:
                if p.key not in seen:
                    seen.add(p.key)
                    prefixes.append(p)
        return cls(exact, tuple(sorted(prefixes, key=lambda e: -len(e.key))))

    def find(self, key: bytes) -> Optional[Entry]:
        """The entry for `key` (bytes), or None: an exact entry first, then the longest
        matching prefix. The caller checks the lease (live(e, now))."""
        e = self.exact.get(key)
        if e is None and self._starts and key.startswith(self._starts):
            for p in self.prefixes:
                if key.startswith(p.key):
                    return p
        return e

    @staticmethod
    def live(e: Entry, now: float) -> bool:
        return now - e.renewed <= e.lease

    def entries(self) -> List[Entry]:
        return list(self.exact.values()) + list(self.prefixes)


EMPTY = FeedState({}, ())


class SseParser:
    """Incremental text/event-stream parser (WHATWG HTML, "server-sent events"): feed it
    lines; it returns (event, data, id) at each blank line that ends an event."""

    def __init__(self) -> None:
        self._event = ""
        self._data: List[str] = []
        self._id: Optional[str] = None

    def line(self, text: str) -> Optional[Tuple[str, str, Optional[str]]]:
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


class FeedError(Exception):
    """A feed answered something other than its protocol."""


class FeedConfigError(FeedError):
    """A feed that cannot work as configured: credentials missing or refused (401, 403),
    no feed at the URL (404), or TLS failing. Retrying soon does not help."""


class FeedRetryLater(FeedError):
    """429 or 503: the feed asks the client to come back after `retry_after` seconds."""

    def __init__(self, message: str, retry_after: Optional[float]):
        super().__init__(message)
        self.retry_after = retry_after


def retry_after_seconds(value: Optional[str], now_wall: Optional[float] = None) -> Optional[float]:
    """Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP-date; None when absent or
    unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now_wall is None else now_wall))


def status_error(method: str, path: str, resp: http.client.HTTPResponse) -> FeedError:
    """The error for a feed answer that is not 200 (or 204 for a demand report)."""
    code = resp.status
    what = f"{method} {path}: HTTP {code}"
    if code == 401:
        return FeedConfigError(f"{what}: hotkeyd wants basic auth credentials (give "
                               "HotkeyClient auth=(user, password)) or refused those given")
    if code == 403:
        return FeedConfigError(f"{what}: hotkeyd refuses these credentials for the feed")
    if code == 404:
        return FeedConfigError(f"{what}: no feed at this path; feed_url should be hotkeyd's "
                               "web server (http://host:port) or that plus /api/v1/hotkeys")
    if code in (429, 503):
        return FeedRetryLater(what, retry_after_seconds(resp.getheader("Retry-After")))
    return FeedError(what)


@dataclasses.dataclass(frozen=True)
class FeedHealth:
    """One feed's health, as HotkeyClient.health() reports it."""

    url: str
    connected: bool             # a stream is open and its snapshot applied
    version: Optional[int]      # the set's version the kit holds (None: never synced)
    entries: int                # entries held from this feed
    last_error: Optional[str]   # the last failure, or None since the last sync
    misconfigured: bool         # last_error is a FeedConfigError (see there)
    since_last_event: Optional[float]  # seconds since the stream last delivered an event


class DemandLedger:
    """The demand one feed's entries kept off the shard since the last report: per key,
    reads served from a local copy and writes sent to sub-keys. Counts are added under the
    owner's lock (`lock`), which the owner already holds when it counts a cache hit."""

    MAX_KEYS = 1024
    MAX_BODY = 256 * 1024
    MAX_AGE = 60.0

    def __init__(self, lock: threading.Lock, clock: Callable[[], float]):
        self.lock = lock
        self._clock = clock
        self.counts: Dict[bytes, List[int]] = {}
        self.since = clock()         # when the counts held now began
        self.not_before = 0.0        # a 429's Retry-After
        self.enabled = True          # False after a 404: the daemon has no demand endpoint

    def add_locked(self, key: bytes, reads: int, writes: int) -> None:
        c = self.counts.get(key)
        if c is None:
            self.counts[key] = [reads, writes]
        else:
            c[0] += reads
            c[1] += writes

    def take(self, now: float) -> Tuple[Optional[bytes], Dict[bytes, List[int]], float, int]:
        """(body or None, the counts taken, the start of their interval, keys dropped). The
        counts are removed; give them back with restore() if the report fails."""
        with self.lock:
            counts, since = self.counts, self.since
            if not counts:
                self.since = now
                return None, {}, since, 0
            if not self.enabled or now - since > self.MAX_AGE:
                self.counts, self.since = {}, now
                return None, {}, since, len(counts) if self.enabled else 0
            if now < self.not_before:
                return None, {}, since, 0
            self.counts, self.since = {}, now
        ranked = sorted(counts.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
        keys: List[Dict[str, Any]] = []
        size, dropped = 64, 0
        for k, (r, w) in ranked:
            item = {"key_b64": base64.b64encode(k).decode(), "reads": r, "writes": w}
            n = len(json.dumps(item)) + 1
            if len(keys) >= self.MAX_KEYS or size + n > self.MAX_BODY:
                dropped += 1
                continue
            keys.append(item)
            size += n
        body = json.dumps({"interval_seconds": round(max(now - since, 1e-3), 3),
                           "keys": keys}).encode()
        return body, counts, since, dropped

    def restore(self, counts: Dict[bytes, List[int]], since: float) -> None:
        """Puts counts back after a failed report: the next report covers both intervals."""
        with self.lock:
            for k, (r, w) in counts.items():
                self.add_locked(k, r, w)
            self.since = min(self.since, since)


class FeedFollower:
    """Follows one hotkeyd feed on a daemon thread. `on_retire(entry, expired=False)` is
    called for every entry that leaves the set (removed, expired, or replaced by a different
    fix), under the table lock and before the new table is published, so that an owner
    which records the entry there never has a moment in which the key is in neither place;
    it must not block. `on_publish()` is called under the same lock after each new table
    is published; it must not block either. `namer(key, S)` names a split entry's sub-keys
    (naming.sub_key_names by default). `stats` is the owner's counter dict, updated under
    `stats_lock`, which also guards the demand ledger."""

    BACKOFF_INITIAL = 0.5
    BACKOFF_MAX = 30.0
    # A Retry-After longer than this is taken as this: a feed that is back sooner is not
    # ignored for an hour because one answer said so.
    RETRY_AFTER_MAX = 300.0

    def __init__(self, url: str, *, on_retire: Callable[..., None], stats: Dict[str, int],
                 stats_lock: threading.Lock, on_publish: Optional[Callable[[], None]] = None,
                 namer: Optional[Namer] = None, auth: Optional[Tuple[str, str]] = None,
                 ssl_context: Optional[ssl.SSLContext] = None, connect_timeout: float = 5.0,
                 clock: Callable[[], float] = time.monotonic,
                 rng: Optional[random.Random] = None):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"feed_url must be http(s)://host[:port][/path]: {url!r}")
        self.url = url
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
        self._demand_path = self._set_path + "/demand"
        self._headers: Dict[str, str] = {}
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
        self._lock = threading.Lock()  # serialises changes of `state`, `version`, health
        self.state = EMPTY
        self.version: Optional[int] = None
        self.connected = threading.Event()  # set while a stream is open and synced
        self.ledger = DemandLedger(stats_lock, clock)
        self._stop = threading.Event()
        self._conn: Optional[http.client.HTTPConnection] = None
        self._warned: Set[str] = set()
        self._last_error: Optional[FeedError] = None
        self._last_event: Optional[float] = None
        self._thread = threading.Thread(target=self._run, name="hotkeyd-feed", daemon=True)

    # ------------------------------------------------------------------ life cycle

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        conn = self._conn
        if conn is not None:
            try:
                if conn.sock is not None:
                    conn.sock.shutdown(2)
            except OSError:
                pass
        if self._thread.is_alive():
            self._thread.join(5)

    def health(self) -> FeedHealth:
        now = self._clock()
        with self._lock:
            err, last = self._last_error, self._last_event
            return FeedHealth(self.url, self.connected.is_set(), self.version,
                              len(self.state.entries()), None if err is None else str(err),
                              isinstance(err, FeedConfigError),
                              None if last is None else now - last)

    def config_error(self) -> Optional[FeedConfigError]:
        with self._lock:
            err = self._last_error
        return err if isinstance(err, FeedConfigError) else None

    # ------------------------------------------------------------------ table

    def expire(self) -> List[Entry]:
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

    def retire_all(self) -> None:
        """Drops every entry, as removes would (the feed is no longer followed)."""
        with self._lock:
            for e in self.state.entries():
                self._on_retire(e)
            self._publish({}, [])

    def _publish(self, exact: Dict[bytes, Entry], prefixes: Iterable[Entry]) -> None:
        self.state = FeedState(exact, tuple(sorted(prefixes, key=lambda e: -len(e.key))))
        if self._on_publish is not None:
            self._on_publish()

    def _count(self, name: str, n: int = 1) -> None:
        with self._stats_lock:
            self._stats[name] += n

    def _warn_once(self, what: str, msg: str, level: int = logging.WARNING) -> None:
        with self._lock:
            if what in self._warned:
                return
            self._warned.add(what)
        log.log(level, "%s", msg)

    def _parse_entries(self, objs: Iterable[Any], now: float, lease: float) -> List[Entry]:
        out = []
        for obj in objs:
            try:
                e = parse_entry(obj, now, lease, self._namer)
            except ValueError as err:
                self._count("ignored_entries")
                self._warn_once("malformed", f"hotkeyd feed {self.url}: ignoring a malformed "
                                f"entry: {err}")
                continue
            if e is None:
                self._count("ignored_entries")
                self._warn_once("no_key", f"hotkeyd feed {self.url}: entries carry no key_b64 "
                                "(the feed sends raw keys only to authenticated callers); "
                                "ignoring them")
                continue
            e.ledger = self.ledger
            out.append(e)
        return out

    def _apply_snapshot(self, doc: Dict[str, Any]) -> None:
        now = self._clock()
        version = doc["version"]
        lease = float(doc["lease_seconds"])
        fresh = self._parse_entries(doc.get("entries", []), now, lease)
        retired = []
        with self._lock:
            old = {(e.key, e.prefix): e for e in self.state.entries()}
            exact: Dict[bytes, Entry] = {}
            prefixes: List[Entry] = []
            for e in fresh:
                prev = old.pop((e.key, e.prefix), None)
                if prev is not None and prev.same_fix(e):
                    prev.renewed, prev.lease = now, lease
                    e = prev
                elif prev is not None and not prev.same_parts(e):
                    retired.append(prev)
                if e.prefix:
                    prefixes.append(e)
                else:
                    exact[e.key] = e
            retired.extend(old.values())
            for e in retired:
                self._on_retire(e)
            self._lease = lease
            self._publish(exact, prefixes)
            self.version = version

    def _apply_entry(self, obj: Any, version: int) -> None:
        now = self._clock()
        with self._lock:
            lease = self._lease
        fresh = self._parse_entries([obj], now, lease)
        with self._lock:
            self.version = version
            if not fresh:
                return
            e = fresh[0]
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
            if e.prefix:
                prefixes.append(e)
            else:
                exact[e.key] = e
            if prev is not None and not prev.same_parts(e):
                self._on_retire(prev)
            self._publish(exact, prefixes)

    def _apply_remove(self, obj: Dict[str, Any], version: int) -> None:
        b64 = obj.get("key_b64")
        key = None
        if b64 is not None:
            try:
                key = base64.b64decode(b64, validate=True)
            except (binascii.Error, TypeError):
                self._count("ignored_entries")
        with self._lock:
            self.version = version
            if key is None:
                return
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

    def _renew_all(self) -> None:
        now = self._clock()
        with self._lock:
            for e in self.state.entries():
                e.renewed = now

    # ------------------------------------------------------------------ protocol

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self._https:
            ctx = self._ssl or ssl.create_default_context()
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=ctx)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _refetch(self) -> None:
        conn = self._connect(self._connect_timeout)
        try:
            conn.request("GET", self._set_path, headers=self._headers)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise status_error("GET", self._set_path, resp)
            self._apply_snapshot(json.loads(body))
        finally:
            conn.close()
        self._count("feed_resyncs")

    def _handle(self, event: str, data: str) -> None:
        if event not in ("snapshot", "add", "change", "remove", "heartbeat"):
            return  # unknown events are for newer clients
        doc = json.loads(data)
        self._count("feed_events")
        with self._lock:
            self._last_event = self._clock()
            held = self.version
        if event == "snapshot":
            self._apply_snapshot(doc)
            return
        version = doc["version"]
        if held is None:
            raise FeedGap()
        if event == "heartbeat":
            if version == held:
                self._renew_all()
            elif version > held:
                raise FeedGap()
            return
        if version <= held:
            return  # already in the set we hold (after a refetch)
        if version != held + 1:
            raise FeedGap()
        if event == "remove":
            self._apply_remove(doc, version)
        else:
            self._apply_entry(doc["entry"], version)

    def _stream_once(self) -> bool:
        """One connection: reads events until it fails or stop() is called. Returns True
        when a snapshot arrived (the backoff then restarts from its initial delay)."""
        conn = self._connect(self._connect_timeout)
        self._conn = conn
        synced = False
        try:
            try:
                conn.request("GET", self._stream_path,
                             headers={**self._headers, "Accept": "text/event-stream"})
                resp = conn.getresponse()
            except ssl.SSLError as err:
                raise FeedConfigError(f"TLS with {self.url}: {err}") from None
            if resp.status != 200:
                raise status_error("GET", self._stream_path, resp)
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
                    with self._lock:
                        self._last_error = None
                    with self._stats_lock:  # the ledger's lock
                        self.ledger.enabled = True  # a daemon restarted may serve it now
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

    def _run(self) -> None:
        delay = self.BACKOFF_INITIAL
        first = True
        while not self._stop.is_set():
            if not first:
                self._count("feed_reconnects")
            first = False
            wait = None
            try:
                if self._stream_once():
                    delay = self.BACKOFF_INITIAL
            except FeedConfigError as err:
                if not self._stop.is_set():
                    self._set_error(err, logging.ERROR)
                    delay = self.BACKOFF_MAX
            except FeedRetryLater as err:
                if not self._stop.is_set():
                    self._set_error(err, logging.INFO)
                    if err.retry_after is not None:
                        wait = min(err.retry_after, self.RETRY_AFTER_MAX)
            except Exception as err:  # noqa: BLE001 (a bad feed must not end the thread)
                if not self._stop.is_set():
                    self._set_error(FeedError(f"{type(err).__name__}: {err}"), logging.INFO)
            # Jitter spreads the reconnects of many clients after a daemon restart; a
            # Retry-After is a floor, jittered above it.
            pause = self._rng.uniform(delay / 2, delay)
            if wait is not None:
                pause = wait + self._rng.uniform(0, delay / 2)
            if self._stop.wait(pause):
                break
            delay = min(delay * 2, self.BACKOFF_MAX)

    def _set_error(self, err: FeedError, level: int) -> None:
        """Records a failure for health(); logs it when it differs from the last one, so a
        feed down for hours logs once, and a misconfigured one says so at ERROR."""
        with self._lock:
            prev = self._last_error
            self._last_error = err
        if prev is None or str(prev) != str(err):
            log.log(level, "hotkeyd feed %s: %s; retrying", self.url, err)

    # ------------------------------------------------------------------ demand

    def report_demand(self) -> Optional[int]:
        """Posts what the ledger holds (docs/feed.md, "Demand a kit absorbs"), at most one
        request; never retried (a failed report's counts join the next one, and counts
        older than 60 s are dropped). Returns the HTTP status, or None when nothing was
        sent or the request failed."""
        now = self._clock()
        body, counts, since, dropped = self.ledger.take(now)
        if dropped:
            self._count("demand_keys_dropped", dropped)
        if body is None:
            return None
        status = None
        try:
            conn = self._connect(self._connect_timeout)
            try:
                conn.request("POST", self._demand_path, body=body,
                             headers={**self._headers, "Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                status = resp.status
                retry = retry_after_seconds(resp.getheader("Retry-After"))
            finally:
                conn.close()
        except (OSError, http.client.HTTPException) as err:
            self.ledger.restore(counts, since)
            self._count("demand_errors")
            log.debug("hotkeyd feed %s: demand report failed: %s", self.url, err)
            return None
        if status == 204:
            self._count("demand_reports")
            return status
        self._count("demand_errors")
        if status == 429:
            with self._stats_lock:
                self.ledger.not_before = now + min(retry or 1.0, self.RETRY_AFTER_MAX)
            self.ledger.restore(counts, since)
        elif status == 404:
            with self._stats_lock:
                self.ledger.enabled = False
            self._warn_once("demand404", f"hotkeyd feed {self.url}: POST {self._demand_path} "
                            "answers 404 (a hotkeyd without demand reports); not reporting "
                            "until the feed reconnects", logging.INFO)
        elif status in (401, 403):
            self.ledger.restore(counts, since)  # the feed's own credentials: see health()
        else:
            self._warn_once(f"demand{status}", f"hotkeyd feed {self.url}: a demand report "
                            f"was answered {status}; its counts are dropped")
        return status
