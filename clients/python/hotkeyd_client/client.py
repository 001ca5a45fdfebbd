"""client.py: HotkeyClient, a redis-py client that applies hotkeyd's advised fixes.

HotkeyClient wraps a redis-py client (redis.Redis, or redis.RedisCluster for the names and
reads; see README) and follows one or more hotkeyd feeds (feed.py; one per Redis Cluster
node, or one per node found by a topology.ClusterFeeds). For a key in a feed it applies the
entry's mode; every other key, and every command it does not cover, goes to the wrapped
client unchanged (the uncovered ones through __getattr__).

  cache             GET/MGET/HGET/HMGET/HGETALL served from a local copy younger than
                    refresh_seconds; at most one origin fetch per (key, read) in flight
                    (single-flight). INCR/INCRBY/DECR/DECRBY through this client write
                    through: the integer reply becomes the key's GET copy. Any other write
                    through this client drops the key's copies once it has returned.
  replicate         reads go to replica_client, uncached. Without one the kit cannot
                    replicate: calls stay plain (logged once, counted in `unapplied`), unless
                    replicate_cache_seconds asks for a local copy of that age instead (the
                    feed sends no refresh_seconds for replicate).
  split             the key's S parts are the key itself (part 0) and S-1 sub-keys;
                    INCR/INCRBY/DECR/DECRBY/INCRBYFLOAT go to one part chosen at random;
                    GET returns the sum of the parts (one pipelined read).
  split_cache       split, with GET's sum cached like cache mode.
  isolate           every covered command on the key goes to isolate_client.

Pipelines and transactions (pipeline(), transaction()) apply the split fix too: a queued GET
of a split key reads every part and execute() returns their sum, a counter write goes to one
part; any other command on a split key, a WATCH of one, or a command on one between WATCH
and MULTI raises SplitKeyError instead of acting on part 0 alone. Other keys in a pipeline
go to the wrapped client (isolate-mode keys included: a pipeline runs on one connection).

Staleness (cache modes): a read that starts at time t returns a value the origin held at or
after t - refresh_seconds. A cached copy is stamped with the time its fetch (or its counter
write) was SENT, served only while younger than refresh_seconds, and a caller joins an
in-flight fetch only if that fetch was sent less than refresh_seconds before the call. With
tracking=True (tracking.py) the server also invalidates a copy when the key is written.

Split sub-key i (1..S-1) is named `<key>{hk:<crc32(key) hex>:<i>[.<n>]}` (naming.py):
appending a hash tag leaves a key that has its own hash tag in its own slot (Redis Cluster
hashes the first tag), and puts an untagged key's S parts in S distinct cluster slots (n is
the smallest counter that makes part i's slot differ from those of parts 0..i-1), spread
differently for different keys by the crc32 in the tag. With a RedisCluster client the
parts of an untagged key are also put on distinct nodes while nodes remain, from the
client's slot -> node map when the entry arrives; the names then stay fixed for the
entry's life (see README on topology changes).

Fold-back: when a split entry leaves the feed or its lease runs out, the kit stops choosing
parts for new writes, waits for its own writes in flight, then runs one Lua script that
moves each sub-key's value into the key (GET, INCRBY or INCRBYFLOAT on the key, DEL) in one
atomic step. Until the fold has run, GET keeps adding the sub-keys. The script is
idempotent (a second run finds no sub-keys), so a failed fold is retried. With a
RedisCluster client and an untagged key the sub-keys are in other slots than the key, one
script cannot span them, and each sub-key is moved by GETDEL then INCRBY(FLOAT) on the key:
a process dying between the two loses that sub-key's value (give split keys a hash tag
where that matters).

Demand: the reads a copy served and the writes sent to sub-keys are counted per key and
reported to the feed that named the key, once a second (feed.DemandLedger).

Thread safety: a HotkeyClient may be shared by threads, as a redis.Redis may; a pipeline
may not, as a redis-py pipeline may not.
"""

from __future__ import annotations

import decimal
import logging
import random
import ssl
import threading
import time
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence, Set,
                    Tuple, Union)

import redis
import redis.asyncio

from .feed import (EMPTY, REFRESH_MODES, SPLIT_MODES, Entry, EntryInfo, FeedFollower,
                   FeedHealth, FeedState)
from .naming import has_hash_tag, sub_key_names

log = logging.getLogger("hotkeyd_client")

KeyT = Union[bytes, str, memoryview, int, float]
FeedUrls = Union[None, str, Sequence[str], "ClusterFeedsLike"]

STAT_NAMES = ("cache_hits", "cache_misses", "origin_fetches", "split_writes", "folds",
              "fold_errors", "fallbacks", "isolated_calls", "unapplied", "feed_reconnects",
              "feed_events", "feed_resyncs", "ignored_entries", "pipeline_split_commands",
              "demand_reports", "demand_errors", "demand_keys_dropped", "invalidations",
              "feeds_added", "feeds_removed")

# KEYS[1] is the base, KEYS[2..] the sub-keys. Each sub-key's value is added to the base
# before the sub-key is deleted, so an error (a base that is not a number) leaves the value
# where it was. INCRBY keeps integers exact; a value INCRBY refuses (a float, or a sum past
# 64 bits) goes through INCRBYFLOAT.
FOLD_LUA = """
local moved = 0
for i = 2, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    local r = redis.pcall('INCRBY', KEYS[1], v)
    if type(r) == 'table' and r.err then
      r = redis.pcall('INCRBYFLOAT', KEYS[1], v)
      if type(r) == 'table' and r.err then return r end
    end
    redis.call('DEL', KEYS[i])
    moved = moved + 1
  end
end
return moved
"""

# Counter commands a split key's parts take, by the name redis-py sends.
SPLIT_COUNTERS = frozenset({b"INCR", b"INCRBY", b"DECR", b"DECRBY", b"INCRBYFLOAT"})


class SplitKeyError(redis.exceptions.RedisError):  # type: ignore[misc]
    """A command the kit cannot apply to a split key as one value: in a pipeline or a
    transaction, anything but GET, the counters, DEL and UNLINK (the key's value is spread
    over its parts, and acting on part 0 alone would be wrong), and WATCH."""


class ClusterFeedsLike:
    """What HotkeyClient needs from a feed source that changes (topology.ClusterFeeds)."""

    def urls(self, redis_client: Any) -> Sequence[str]:  # pragma: no cover - interface
        raise NotImplementedError

    interval: float = 5.0


def _sum_values(values: Sequence[Any]) -> Any:
    """GET of a split key: base + sub-keys as Redis would print the exact sum (integers as
    integers, other decimals without exponent), typed like the replies (bytes or str)."""
    for v in values:
        if isinstance(v, BaseException):
            return v  # a pipeline run with raise_on_error=False: the part's error
    present = [v for v in values if v is not None]
    if not present:
        return None
    if len(present) == 1 and values[0] is not None:
        return values[0]  # only the base: exactly what a plain GET returns
    total = decimal.Decimal(0)
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        for v in present:
            try:
                total += decimal.Decimal(v.decode() if isinstance(v, bytes) else v)
            except decimal.InvalidOperation:
                raise redis.exceptions.ResponseError(
                    "split key holds a value that is not a number") from None
        if total == total.to_integral_value():
            text = str(int(total))
        else:
            text = format(total.normalize(), "f")
    return text if isinstance(present[0], str) else text.encode()


class _Feeds:
    """The followers and the union of their tables, as one immutable FeedState in `state`:
    republished whenever a follower publishes (its on_publish hook, under that follower's
    lock), never built per call. With no follower the state is always EMPTY; with one it is
    that follower's own. `followers` is replaced whole (a topology change), never edited."""

    def __init__(self) -> None:
        self.state = EMPTY
        self.followers: Tuple[FeedFollower, ...] = ()
        self._lock = threading.Lock()

    def update(self) -> None:
        with self._lock:
            states = [f.state for f in self.followers]
            if not states:
                self.state = EMPTY
            else:
                self.state = states[0] if len(states) == 1 else FeedState.merged(states)


class _Flight:
    __slots__ = ("sent", "done", "value", "error")

    def __init__(self, sent: float):
        self.sent = sent
        self.done = threading.Event()
        self.value: Any = None
        self.error: Optional[BaseException] = None


class _Slot:
    """One cached read of one key under one feed entry: the value, when its fetch was sent,
    the fetch in flight. A read under another entry (the key's fix changed) neither serves
    the value nor joins the fetch: under cache the copy is the key's own value, under
    split_cache the sum of its parts, and in the kits of other app servers, which take a
    change a few milliseconds apart, the key's own value stops being the total as soon as
    one of them writes a part."""

    __slots__ = ("value", "sent", "flight", "entry")

    def __init__(self, entry: Optional[Entry]) -> None:
        self.value: Any = None
        self.sent: Optional[float] = None
        self.flight: Optional[_Flight] = None
        self.entry = entry


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value


class HotkeyClient:
    """See the module comment. `redis_client` is the origin (redis.Redis or
    redis.RedisCluster); `feed_url` hotkeyd's HTTP server (e.g. "http://127.0.0.1:10110"), a
    list or tuple of them (one hotkeyd per Redis Cluster node: the kit acts on the union of
    their entries; where two feeds name the same key or prefix, the entry of the feed listed
    first is used), a topology.ClusterFeeds (the feeds follow the cluster's nodes), or None
    to pass everything through.

    Keyword arguments: isolate_client (where isolate-mode keys go; without one, they stay on
    redis_client), replica_client (replicate-mode reads), replicate_cache_seconds (without a
    replica_client: keep a local copy of replicate-mode reads this long; None: plain calls),
    auth ((user, password): basic auth, which the feed needs to send raw keys when it labels
    keys by hash or prefix), ssl_context (https feeds), sweep_seconds (how often leases are
    checked and folds run), report_demand (False: no demand reports), tracking (True: the
    server invalidates cached copies on writes, tracking.py; redis.Redis only), encoding (how
    str keys become bytes; default: the wrapped client's), start (False: call start()
    yourself), clock and rng (for tests)."""

    def __init__(self, redis_client: Any, feed_url: FeedUrls, *,
                 isolate_client: Any = None, replica_client: Any = None,
                 replicate_cache_seconds: Optional[float] = None,
                 auth: Optional[Tuple[str, str]] = None,
                 ssl_context: Optional[ssl.SSLContext] = None, sweep_seconds: float = 0.1,
                 report_demand: bool = True, tracking: bool = False,
                 encoding: Optional[str] = None, start: bool = True,
                 clock: Callable[[], float] = time.monotonic,
                 rng: Optional[random.Random] = None):
        if replicate_cache_seconds is not None and not replicate_cache_seconds > 0:
            raise ValueError("replicate_cache_seconds must be > 0 (or None)")
        self._r = redis_client
        self._isolate = isolate_client
        self._replica = replica_client
        self._replicate_ttl = replicate_cache_seconds
        self._clock = clock
        self._random = (rng or random.Random()).random
        # get_encoder(): redis.Redis and redis.RedisCluster alike.
        get_encoder = getattr(redis_client, "get_encoder", None)
        encoder = get_encoder() if get_encoder is not None else None
        self._encoding: str = encoding or getattr(encoder, "encoding", None) or "utf-8"
        self._decode = bool(getattr(encoder, "decode_responses", False))
        self._cluster = isinstance(redis_client, (redis.RedisCluster,
                                                  redis.asyncio.RedisCluster))
        self._lock = threading.Lock()       # cache, stats, demand, fold bookkeeping
        self._stats: Dict[str, int] = dict.fromkeys(STAT_NAMES, 0)
        self._cache: Dict[bytes, Dict[Tuple[Any, ...], _Slot]] = {}
        self._folding: Dict[bytes, Entry] = {}   # retired split entries, by key
        self._fold_queue: List[Entry] = []
        self._fold_failed: Set[int] = set()  # id() of entries whose fold failed (logged once)
        self._fold_script = redis_client.register_script(FOLD_LUA)
        self._warned: Set[str] = set()
        self._sweep_seconds = sweep_seconds
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._threads: List[threading.Thread] = []
        self._started = False
        self._auth = auth
        self._ssl = ssl_context
        self._feed = _Feeds()
        self._topology: Optional[ClusterFeedsLike] = None
        self._tracker: Any = None
        if tracking:
            from .tracking import Tracker
            self._tracker = Tracker(redis_client, self._on_invalidate, self._on_tracking_lost)
        if isinstance(feed_url, ClusterFeedsLike):
            self._topology = feed_url
            try:
                urls: List[str] = list(dict.fromkeys(feed_url.urls(redis_client)))
            except Exception as err:  # noqa: BLE001 (the sweeper reads the topology again)
                log.warning("hotkeyd_client: reading the cluster's nodes failed: %s", err)
                urls = []
        else:
            urls = [feed_url] if isinstance(feed_url, str) else list(feed_url or ())
        self._feed.followers = tuple(self._follower(u) for u in urls)
        if urls or self._topology is not None:
            self._threads.append(threading.Thread(target=self._sweep_loop,
                                                  name="hotkeyd-sweep", daemon=True))
            if report_demand:
                self._threads.append(threading.Thread(target=self._report_loop,
                                                      name="hotkeyd-demand", daemon=True))
            if start:
                self.start()

    def _follower(self, url: str) -> FeedFollower:
        return FeedFollower(url, on_retire=self._on_retire, on_publish=self._feed.update,
                            namer=self._sub_key_names, stats=self._stats,
                            stats_lock=self._lock, auth=self._auth, ssl_context=self._ssl,
                            clock=self._clock)

    # ------------------------------------------------------------------ public

    def start(self) -> None:
        """Starts following the feeds (the constructor does, unless start=False)."""
        if self._started:
            return
        self._started = True
        if self._tracker is not None:
            self._tracker.start()
        for f in self._feed.followers:
            f.start()
        for t in self._threads:
            t.start()

    def close(self) -> None:
        """Stops following the feeds and runs the folds already due."""
        if self._started and not self._stopping.is_set():
            self._stopping.set()
            self._wake.set()
            for f in self._feed.followers:
                f.stop()
            for t in self._threads:
                t.join(10)
            if self._tracker is not None:
                self._tracker.stop()
        self._run_folds()

    def __enter__(self) -> "HotkeyClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def stats(self) -> Dict[str, int]:
        """The kit's counters (STAT_NAMES), as a new dict."""
        with self._lock:
            return dict(self._stats)

    def health(self) -> List[FeedHealth]:
        """Each feed's health: connected, the version held, the last error (and whether it
        is a misconfiguration: 401, 403, 404, TLS)."""
        return [f.health() for f in self._feed.followers]

    def wait_synced(self, timeout: Optional[float] = None) -> bool:
        """True once every feed's stream is open and its snapshot applied (within `timeout`
        s in all); False at the timeout. Raises FeedConfigError as soon as a feed fails in
        a way waiting cannot fix (401, 403, 404, TLS)."""
        followers = self._feed.followers
        end = None if timeout is None else time.monotonic() + timeout
        for f in followers:
            while not f.connected.is_set():
                err = f.config_error()
                if err is not None:
                    raise err
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                f.connected.wait(0.05 if left is None else min(0.05, left))
        return bool(followers)

    def entries(self) -> List[EntryInfo]:
        """Copies of the entries held now (live or not yet swept), the union over the feeds."""
        now = self._clock()
        out = []
        for f in self._feed.followers:
            for e in f.state.entries():
                out.append(EntryInfo.of(e, now, f.url))
        state = self._feed.state
        held = {(e.key, e.prefix): e for e in state.entries()}
        # Where two feeds name a key, the one in force (the union's) is listed.
        return [i for i in out if held.get((i.key, i.prefix)) is not None
                and self._origin_url(held[(i.key, i.prefix)]) == i.feed_url]

    def _origin_url(self, e: Entry) -> Optional[str]:
        for f in self._feed.followers:
            if f.ledger is e.ledger:
                return f.url
        return None

    @property
    def redis(self) -> Any:
        """The wrapped client."""
        return self._r

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes HotkeyClient does not define: delegate unchanged.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._r, name)

    # ------------------------------------------------------------------ lookup

    def _sub_key_names(self, key: bytes, split_factor: int) -> Sequence[bytes]:
        """The followers' namer: with a RedisCluster client and an untagged key, from the
        client's slot -> node map as it is now (naming.sub_key_names)."""
        if self._cluster and not has_hash_tag(key):
            return sub_key_names(key, split_factor, self._slot_nodes())
        return sub_key_names(key, split_factor)

    def _slot_nodes(self) -> Optional[Dict[int, str]]:
        """{slot: primary node name} from the cluster client's slot map (the slots it
        covers), copied in one step; None when the client has no map to copy."""
        for _ in range(3):
            try:
                cache = dict(self._r.nodes_manager.slots_cache)
            except AttributeError:
                return None
            except RuntimeError:  # resized by a concurrent MOVED update: copy again
                continue
            return {slot: nodes[0].name for slot, nodes in cache.items() if nodes}
        return None

    def _kb(self, key: Any) -> bytes:
        if isinstance(key, bytes):
            return key
        if isinstance(key, str):
            return key.encode(self._encoding)
        if isinstance(key, memoryview):
            return key.tobytes()
        if isinstance(key, (int, float)) and not isinstance(key, bool):
            return repr(key).encode()
        raise redis.exceptions.DataError(f"invalid key type {type(key).__name__}")

    def _lookup(self, key: Any,
                st: Optional[FeedState] = None) -> Tuple[bytes, Optional[Entry], bool]:
        """(key bytes, entry, live) for a key the feed names, else (key bytes, None, False).
        A split entry stays in force for reads after its lease or removal until folded."""
        k = self._kb(key)
        if st is None:
            st = self._feed.state
        e = st.find(k) if st.active else None
        if e is not None:
            if st.live(e, self._clock()):
                return k, e, True
            if e.mode not in SPLIT_MODES:
                return k, None, False
            return k, e, False
        if self._folding:
            with self._lock:
                e = self._folding.get(k)
        return k, e, False

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._stats[name] += n

    def _warn_once(self, what: str, msg: str) -> None:
        with self._lock:
            if what in self._warned:
                return
            self._warned.add(what)
        log.warning("%s", msg)

    def _target(self, e: Entry) -> Any:
        if self._isolate is None:
            self._warn_once("no_isolate", "hotkeyd feed names isolate-mode keys but the "
                            "HotkeyClient has no isolate_client: they stay on redis_client")
            self._count("unapplied")
            return self._r
        self._count("isolated_calls")
        return self._isolate

    def _refresh_of(self, e: Entry) -> float:
        """How long a copy of `e`'s key lives: the feed's refresh_seconds, or for replicate
        without a replica the replicate_cache_seconds asked for (0: no copy)."""
        if e.mode in REFRESH_MODES:
            return e.refresh
        if e.mode == "replicate" and self._replica is None and self._replicate_ttl:
            return self._replicate_ttl
        return 0.0

    # ------------------------------------------------------------------ cache

    def _invalidate(self, k: bytes) -> None:
        if self._cache:
            with self._lock:
                self._cache.pop(k, None)

    def _on_invalidate(self, keys: Optional[Iterable[bytes]]) -> None:
        """tracking.Tracker's hook: the server says these keys changed (None: all of them)."""
        with self._lock:
            if keys is None:
                self._stats["invalidations"] += len(self._cache)
                self._cache.clear()
                return
            for k in keys:
                if self._cache.pop(k, None) is not None:
                    self._stats["invalidations"] += 1

    def _on_tracking_lost(self) -> None:
        """Invalidations may have been missed: no copy can be trusted."""
        with self._lock:
            self._cache.clear()

    def _slot_locked(self, e: Entry, k: bytes, read: Tuple[Any, ...], now: float,
                     refresh: float) -> Tuple["_Slot", bool]:
        """Under self._lock: the copy's slot for this read of key `k`, and whether the copy is
        fresh. A fresh one is a hit, reported as demand the kit absorbed; a stale or missing
        one is a miss. Both are counted."""
        per = self._cache.get(k)
        if per is None:
            per = self._cache[k] = {}
        slot = per.get(read)
        if slot is None or slot.entry is not e:  # a copy made under another fix is dropped
            slot = per[read] = _Slot(e)
        if slot.sent is not None and now - slot.sent < refresh:
            self._stats["cache_hits"] += 1
            if e.ledger is not None and not e.prefix:
                e.ledger.add_locked(k, 1, 0)
            return slot, True
        self._stats["cache_misses"] += 1
        return slot, False

    def _cached(self, e: Entry, k: bytes, read: Tuple[Any, ...], fetch: Callable[[], Any],
                refresh: float) -> Any:
        now = self._clock()
        leader = False
        with self._lock:
            slot, hit = self._slot_locked(e, k, read, now, refresh)
            if hit:
                return _copy(slot.value)
            flight = slot.flight
            if flight is None or now - flight.sent >= refresh:
                flight = slot.flight = _Flight(self._clock())
                self._stats["origin_fetches"] += 1
                leader = True
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            return _copy(flight.value)
        epoch = self._tracker.epoch(k) if self._tracker is not None else None
        try:
            flight.value = fetch()
        except BaseException as err:
            flight.error = err
            raise
        finally:
            with self._lock:
                # A write that dropped the key's copies meanwhile detached `slot`: the value
                # may predate the write and is not kept. So is a value the server
                # invalidated while it was on its way (tracking).
                keep = self._cache.get(k, {}).get(read) is slot and (
                    epoch is None or self._tracker.epoch(k) == epoch)
                if keep and flight.error is None and (slot.sent is None
                                                      or flight.sent > slot.sent):
                    slot.value, slot.sent = flight.value, flight.sent
                if slot.flight is flight:
                    slot.flight = None
            flight.done.set()
        return _copy(flight.value)

    def _origin_read(self, method: str, key: Any, args: Tuple[Any, ...]) -> Callable[[], Any]:
        if self._tracker is not None and self._tracker.ready():
            return lambda: self._tracker.read(method, key, *args)
        return lambda: getattr(self._r, method)(key, *args)

    def _read(self, method: str, key: Any, read: Tuple[Any, ...], *args: Any) -> Any:
        """A covered read: GET, HGET, HMGET, HGETALL."""
        k, e, live = self._lookup(key)
        if e is None:
            return getattr(self._r, method)(key, *args)
        mode = e.mode
        if mode in SPLIT_MODES and method == "get":
            se = e
            if live and mode == "split_cache":
                return self._cached(se, k, read, lambda: self._split_get(k, se), se.refresh)
            return self._split_get(k, se)
        if not live:
            return getattr(self._r, method)(key, *args)
        if mode == "replicate":
            if self._replica is not None:
                return getattr(self._replica, method)(key, *args)
            ttl = self._refresh_of(e)
            if not ttl:
                self._warn_once("no_replica", "hotkeyd feed names replicate-mode keys but the "
                                "HotkeyClient has no replica_client (nor "
                                "replicate_cache_seconds): their reads stay plain")
                self._count("unapplied")
                return getattr(self._r, method)(key, *args)
            return self._cached(e, k, read, self._origin_read(method, key, args), ttl)
        if mode == "cache":
            return self._cached(e, k, read, self._origin_read(method, key, args), e.refresh)
        if mode == "isolate":
            return getattr(self._target(e), method)(key, *args)
        return getattr(self._r, method)(key, *args)

    # ------------------------------------------------------------------ split

    def _split_parts_read(self, k: bytes, e: Entry) -> Tuple[bytes, ...]:
        """The names a GET of split key `k` adds up: its parts, and those of a retired
        entry for the key not yet folded."""
        subs = e.sub_keys
        if self._folding:
            with self._lock:
                f = self._folding.get(k)
            if f is not None and f is not e:
                subs = tuple(dict.fromkeys(subs + f.sub_keys))
        return (k,) + subs

    def _split_get(self, k: bytes, e: Entry) -> Any:
        """The sum of the parts, read in one pipeline (with tracking on, on the tracked
        connection, so a write to any part invalidates the cached sum)."""
        names = self._split_parts_read(k, e)
        if self._tracker is not None and self._tracker.ready() and e.mode == "split_cache":
            return _sum_values(self._tracker.read_many("get", names))
        pipe = self._r.pipeline(transaction=False)
        for s in names:
            pipe.get(s)
        return _sum_values(pipe.execute())

    def _choose_part(self, e: Entry) -> Optional[int]:
        """Claims a split write on `e` (inflight + 1) and returns its part's index, or None
        when the entry has been retired (the caller then writes the key)."""
        with e.cond:
            if e.retired:
                return None
            e.inflight += 1
        return int(self._random() * e.split_factor)

    def _release_part(self, e: Entry, k: bytes, index: int) -> None:
        with e.cond:
            e.inflight -= 1
            if not e.inflight:
                e.cond.notify_all()
        with self._lock:
            self._stats["split_writes"] += 1
            if index and e.ledger is not None:
                e.ledger.add_locked(k, 0, 1)

    def _split_write(self, e: Entry, k: bytes, method: str, amount: Any) -> Any:
        """Writes one of the S parts (part 0 is the key itself) and returns its reply, or
        None when the entry has been retired (the caller then writes the key)."""
        index = self._choose_part(e)
        if index is None:
            return None
        try:
            return getattr(self._r, method)(e.parts[index], amount)
        finally:
            self._release_part(e, k, index)

    def _counter(self, method: str, split_method: str, name: KeyT, amount: Any) -> Any:
        if self._feed.state.active or self._folding or self._cache:
            k, e, live = self._lookup(name)
            if e is not None:
                if e.mode in SPLIT_MODES:
                    if live:
                        reply = self._split_write(e, k, split_method, amount)
                        if reply is not None:
                            return reply
                elif live and e.mode == "isolate":
                    return getattr(self._target(e), method)(name, amount)
                elif (live and method != "incrbyfloat" and self._refresh_of(e)
                      and (e.mode != "replicate" or self._replica is None)):
                    sent = self._clock()
                    reply = getattr(self._r, method)(name, amount)
                    self._write_through(e, k, reply, sent)
                    return reply
            reply = getattr(self._r, method)(name, amount)
            self._invalidate(k)
            return reply
        return getattr(self._r, method)(name, amount)

    def _write_through(self, e: Entry, k: bytes, reply: Any, sent: float) -> None:
        """Keeps a counter write's integer reply as the key's GET copy under entry `e`,
        stamped `sent`, the time the write was sent, and drops the key's other cached reads
        (a write that returns after the key's fix changed leaves a copy no read under the
        new fix serves).

        The staleness bound still holds: the origin held `reply` when it ran the write, at
        or after `sent`, so a read at t that this copy serves (t - sent < refresh) returns a
        value the origin held at or after t - refresh. A fetch in flight sent before
        `sent` never overwrites the copy (_cached keeps the newer stamp), and a copy
        stamped later than `sent` is kept: its value is no older. With tracking, the write
        is not a tracked read: the server forgets the key for this client, and the copy
        lives out its refresh like any copy made without tracking."""
        if not isinstance(reply, int) or isinstance(reply, bool):
            self._invalidate(k)
            return
        text: Any = str(reply) if self._decode else str(reply).encode()
        with self._lock:
            per = self._cache.get(k)
            slot = per.get(("get",)) if per else None
            if slot is None or slot.entry is not e:
                slot = _Slot(e)
            self._cache[k] = {("get",): slot}
            if slot.sent is None or sent > slot.sent:
                slot.value, slot.sent = text, sent

    def incr(self, name: KeyT, amount: int = 1) -> Any:
        """In split mode the reply is the chosen part's value, not the total."""
        return self._counter("incr", "incrby", name, amount)

    def incrby(self, name: KeyT, amount: int = 1) -> Any:
        return self._counter("incrby", "incrby", name, amount)

    def decr(self, name: KeyT, amount: int = 1) -> Any:
        return self._counter("decr", "decrby", name, amount)

    def decrby(self, name: KeyT, amount: int = 1) -> Any:
        return self._counter("decrby", "decrby", name, amount)

    def incrbyfloat(self, name: KeyT, amount: float = 1.0) -> Any:
        return self._counter("incrbyfloat", "incrbyfloat", name, amount)

    # ------------------------------------------------------------------ retire and fold

    def _on_retire(self, e: Entry, expired: bool = False) -> None:
        """FeedFollower's hook (under its lock): no waiting here. The key's copies stay when
        another feed's entry for it is the one in force (it names the key too)."""
        cur = self._feed.state.exact.get(e.key)
        with self._lock:
            if expired:
                self._stats["fallbacks"] += 1
            if not e.prefix and (cur is None or cur is e):
                self._cache.pop(e.key, None)
            if e.mode in SPLIT_MODES:
                self._folding[e.key] = e
                self._fold_queue.append(e)
        if e.mode in SPLIT_MODES:
            self._wake.set()

    def _sweep_loop(self) -> None:
        next_topology = 0.0
        while not self._stopping.is_set():
            self._wake.wait(self._sweep_seconds)
            self._wake.clear()
            try:
                if self._topology is not None and time.monotonic() >= next_topology:
                    next_topology = time.monotonic() + self._topology.interval
                    self._follow_topology()
                for f in self._feed.followers:
                    f.expire()
                self._run_folds()
                if self._cache:
                    self._drop_cold_copies()
            except Exception:  # noqa: BLE001 (the sweeper must outlive any one failure)
                log.exception("hotkeyd_client: sweep failed")

    def _report_loop(self) -> None:
        """Demand reports: each feed's ledger, once a second, on this thread, so a slow
        hotkeyd delays only the reports (never a call, a sweep or a fold)."""
        while not self._stopping.wait(1.0):
            for f in self._feed.followers:
                try:
                    f.report_demand()
                except Exception:  # noqa: BLE001 (a report never affects the kit)
                    log.debug("hotkeyd_client: demand report failed", exc_info=True)

    def _follow_topology(self) -> None:
        """Adds a follower for each new node's feed and stops those of nodes gone (their
        entries retire as on a remove: split entries fold back)."""
        assert self._topology is not None
        try:
            urls = list(dict.fromkeys(self._topology.urls(self._r)))
        except Exception as err:  # noqa: BLE001 (keep the feeds held; try again later)
            log.info("hotkeyd_client: reading the cluster's nodes failed: %s", err)
            return
        old = {f.url: f for f in self._feed.followers}
        if urls == list(old):
            return  # same feeds in the same order (the order decides which entry wins)
        kept = [old[u] if u in old else self._follower(u) for u in urls]
        gone = [f for u, f in old.items() if u not in urls]
        with self._feed._lock:
            self._feed.followers = tuple(kept)
        for f in kept:
            if f.url not in old:
                self._count("feeds_added")
                if self._started:
                    f.start()
        for f in gone:
            self._count("feeds_removed")
            f.stop()
            f.retire_all()
        self._feed.update()

    def _drop_cold_copies(self) -> None:
        st = self._feed.state
        with self._lock:
            for k in list(self._cache):
                e = st.find(k)
                if e is None or not (self._refresh_of(e) or e.mode == "split_cache"):
                    del self._cache[k]

    def _run_folds(self) -> None:
        with self._lock:
            queue, self._fold_queue = self._fold_queue, []
        failed = []
        for e in queue:
            with e.cond:
                e.retired = True
                while e.inflight:
                    e.cond.wait()
            try:
                self._fold(e)
            except Exception as err:  # noqa: BLE001 (kept and retried, whatever failed)
                if id(e) not in self._fold_failed:
                    self._fold_failed.add(id(e))
                    log.warning("hotkeyd_client: folding %r failed (%s); retrying at each "
                                "sweep", e.key, err)
                self._count("fold_errors")
                failed.append(e)
                continue
            with self._lock:
                self._stats["folds"] += 1
                if self._folding.get(e.key) is e:
                    del self._folding[e.key]
            self._fold_failed.discard(id(e))
        if failed:
            with self._lock:
                self._fold_queue.extend(failed)

    def _fold(self, e: Entry) -> None:
        keys = [e.key, *e.sub_keys]
        if not self._cluster:
            self._fold_script(keys=keys)
            return
        if has_hash_tag(e.key):
            # EVAL, not EVALSHA: redis-py's cluster client logs every NOSCRIPT it retries,
            # and folds are rare.
            self._r.eval(FOLD_LUA, len(keys), *keys)
            return
        for sub in e.sub_keys:  # cross-slot: see the module comment
            v = self._r.getdel(sub)
            if v is None:
                continue
            try:
                self._r.incrby(e.key, v)
            except redis.exceptions.ResponseError:
                self._r.incrbyfloat(e.key, v)

    # ------------------------------------------------------------------ covered reads

    def get(self, name: KeyT) -> Any:
        if self._feed.state.active or self._folding:
            return self._read("get", name, ("get",))
        return self._r.get(name)

    def hget(self, name: KeyT, key: Any) -> Any:
        if self._feed.state.active:
            return self._read("hget", name, ("hget", key), key)
        return self._r.hget(name, key)

    def hgetall(self, name: KeyT) -> Any:
        if self._feed.state.active:
            return self._read("hgetall", name, ("hgetall",))
        return self._r.hgetall(name)

    def hmget(self, name: KeyT, keys: Any, *args: Any) -> Any:
        if self._feed.state.active:
            fields = tuple(keys) if isinstance(keys, (list, tuple)) else (keys,)
            fields += args
            return self._read("hmget", name, ("hmget",) + fields, list(fields))
        return self._r.hmget(name, keys, *args)

    def mget(self, keys: Any, *args: Any) -> List[Any]:
        if not (self._feed.state.active or self._folding):
            return self._r.mget(keys, *args)  # type: ignore[no-any-return]
        names = list(keys) if isinstance(keys, (list, tuple)) else [keys]
        names += args
        out: List[Any] = [None] * len(names)
        plain = []
        for i, n in enumerate(names):
            _, e, _ = self._lookup(n)
            if e is None:
                plain.append(i)
            else:
                out[i] = self._read("get", n, ("get",))
        if plain:
            values = self._r.mget([names[i] for i in plain])
            for i, v in zip(plain, values):
                out[i] = v
        return out

    # ------------------------------------------------------------------ other writes

    def delete(self, *names: KeyT) -> int:
        return self._multi_key_write("delete", names)

    def unlink(self, *names: KeyT) -> int:
        return self._multi_key_write("unlink", names)

    def _multi_key_write(self, method: str, names: Sequence[KeyT]) -> int:
        if not (self._feed.state.active or self._folding or self._cache):
            return getattr(self._r, method)(*names)  # type: ignore[no-any-return]
        plain, total = [], 0
        for n in names:
            k, e, live = self._lookup(n)
            if e is not None and e.mode in SPLIT_MODES:
                # The counter is its base and its sub-keys: one reply for the name.
                total += 1 if getattr(self._r, method)(k, *e.sub_keys) else 0
            elif e is not None and live and e.mode == "isolate":
                total += getattr(self._target(e), method)(n)
            else:
                plain.append(n)
        if plain:
            total += getattr(self._r, method)(*plain)
        for n in names:
            self._invalidate(self._kb(n))
        return total

    def _first_key(self, method: str, write: bool, name: KeyT, args: Tuple[Any, ...],
                   kwargs: Dict[str, Any]) -> Any:
        """A covered command whose first argument is the one key it touches: routed to
        isolate_client for isolate-mode keys; a write drops the key's cached copies after it
        returns."""
        if self._feed.state.active or self._folding or (write and self._cache):
            k, e, live = self._lookup(name)
            if e is not None and live and e.mode == "isolate":
                return getattr(self._target(e), method)(name, *args, **kwargs)
            reply = getattr(self._r, method)(name, *args, **kwargs)
            if write:
                self._invalidate(k)
            return reply
        return getattr(self._r, method)(name, *args, **kwargs)

    # ------------------------------------------------------------------ pipelines

    def pipeline(self, transaction: Optional[bool] = None, shard_hint: Any = None) -> Any:
        """The wrapped client's pipeline, made split-aware (see the module comment): GET of
        a split key returns the sum, counters go to one part, DEL and UNLINK take the
        sub-keys too; any other command on a split key raises SplitKeyError. `transaction`
        None: the wrapped client's default (MULTI/EXEC for redis.Redis; none for
        redis.RedisCluster, which has no transactions)."""
        kw: Dict[str, Any] = {}
        if transaction is not None:
            kw["transaction"] = transaction
        if shard_hint is not None:
            kw["shard_hint"] = shard_hint
        pipe = self._r.pipeline(**kw)
        from .pipeline import make_split_aware
        return make_split_aware(pipe, self)

    def transaction(self, func: Callable[[Any], Any], *watches: KeyT,
                    shard_hint: Any = None, value_from_callable: bool = False,
                    watch_delay: Optional[float] = None) -> Any:
        """redis.Redis.transaction on a split-aware pipeline: WATCH of a split key raises
        SplitKeyError (a WATCH of part 0 would miss writes to the other parts)."""
        with self.pipeline(True, shard_hint) as pipe:
            while True:
                try:
                    if watches:
                        pipe.watch(*watches)
                    func_value = func(pipe)
                    exec_value = pipe.execute()
                    return func_value if value_from_callable else exec_value
                except redis.exceptions.WatchError:
                    if watch_delay is not None and watch_delay > 0:
                        time.sleep(watch_delay)
                    continue

    # ------------------------------------------------------------------ first-key writes
    # Each is redis.Redis's command of the same name, routed to isolate_client for an
    # isolate-mode key; once it returns, the key's cached copies are dropped.

    def set(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("set", True, name, args, kwargs)

    def setex(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("setex", True, name, args, kwargs)

    def psetex(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("psetex", True, name, args, kwargs)

    def setnx(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("setnx", True, name, args, kwargs)

    def getset(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("getset", True, name, args, kwargs)

    def getdel(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("getdel", True, name, args, kwargs)

    def getex(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("getex", True, name, args, kwargs)

    def append(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("append", True, name, args, kwargs)

    def setrange(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("setrange", True, name, args, kwargs)

    def expire(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("expire", True, name, args, kwargs)

    def pexpire(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("pexpire", True, name, args, kwargs)

    def expireat(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("expireat", True, name, args, kwargs)

    def pexpireat(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("pexpireat", True, name, args, kwargs)

    def persist(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("persist", True, name, args, kwargs)

    def hset(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hset", True, name, args, kwargs)

    def hsetnx(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hsetnx", True, name, args, kwargs)

    def hmset(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hmset", True, name, args, kwargs)

    def hdel(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hdel", True, name, args, kwargs)

    def hincrby(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hincrby", True, name, args, kwargs)

    def hincrbyfloat(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hincrbyfloat", True, name, args, kwargs)

    def lpush(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("lpush", True, name, args, kwargs)

    def rpush(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("rpush", True, name, args, kwargs)

    def lpop(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("lpop", True, name, args, kwargs)

    def rpop(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("rpop", True, name, args, kwargs)

    def lset(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("lset", True, name, args, kwargs)

    def lrem(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("lrem", True, name, args, kwargs)

    def ltrim(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("ltrim", True, name, args, kwargs)

    def sadd(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("sadd", True, name, args, kwargs)

    def srem(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("srem", True, name, args, kwargs)

    def spop(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("spop", True, name, args, kwargs)

    def zadd(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("zadd", True, name, args, kwargs)

    def zincrby(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("zincrby", True, name, args, kwargs)

    def zrem(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("zrem", True, name, args, kwargs)

    # ------------------------------------------------------------------ first-key reads
    # Each is redis.Redis's command of the same name, routed to isolate_client for an
    # isolate-mode key.

    def ttl(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("ttl", False, name, args, kwargs)

    def pttl(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("pttl", False, name, args, kwargs)

    def type(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("type", False, name, args, kwargs)

    def strlen(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("strlen", False, name, args, kwargs)

    def getrange(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("getrange", False, name, args, kwargs)

    def hexists(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hexists", False, name, args, kwargs)

    def hlen(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hlen", False, name, args, kwargs)

    def hkeys(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hkeys", False, name, args, kwargs)

    def hvals(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hvals", False, name, args, kwargs)

    def hstrlen(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("hstrlen", False, name, args, kwargs)

    def llen(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("llen", False, name, args, kwargs)

    def lrange(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("lrange", False, name, args, kwargs)

    def lindex(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("lindex", False, name, args, kwargs)

    def scard(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("scard", False, name, args, kwargs)

    def smembers(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("smembers", False, name, args, kwargs)

    def sismember(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("sismember", False, name, args, kwargs)

    def zcard(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("zcard", False, name, args, kwargs)

    def zscore(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("zscore", False, name, args, kwargs)

    def zrange(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("zrange", False, name, args, kwargs)

    def zrank(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("zrank", False, name, args, kwargs)

    def zrevrange(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("zrevrange", False, name, args, kwargs)

    def zrangebyscore(self, name: KeyT, *args: Any, **kwargs: Any) -> Any:
        return self._first_key("zrangebyscore", False, name, args, kwargs)


FIRST_KEY_WRITES = (
    "set", "setex", "psetex", "setnx", "getset", "getdel", "getex", "append", "setrange",
    "expire", "pexpire", "expireat", "pexpireat", "persist",
    "hset", "hsetnx", "hmset", "hdel", "hincrby", "hincrbyfloat",
    "lpush", "rpush", "lpop", "rpop", "lset", "lrem", "ltrim",
    "sadd", "srem", "spop", "zadd", "zincrby", "zrem")
FIRST_KEY_READS = (
    "ttl", "pttl", "type", "strlen", "getrange", "hexists", "hlen", "hkeys", "hvals",
    "hstrlen", "llen", "lrange", "lindex", "scard", "smembers", "sismember", "zcard",
    "zscore", "zrange", "zrank", "zrevrange", "zrangebyscore")
