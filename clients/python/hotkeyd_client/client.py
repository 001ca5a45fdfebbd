"""client.py: HotkeyClient, a redis-py client that applies hotkeyd's advised fixes.

HotkeyClient wraps a redis-py client (redis.Redis, or redis.RedisCluster for the names and
reads; see README) and follows one or more hotkeyd feeds (feed.py; one per Redis Cluster
node). For a key in a feed it applies the entry's mode; every other key, and every command
it does not cover, goes to the wrapped client unchanged (the uncovered ones through
__getattr__).

  cache, replicate  GET/MGET/HGET/HMGET/HGETALL served from a local copy younger than
                    refresh_seconds; at most one origin fetch per (key, read) in flight
                    (single-flight). INCR/INCRBY/DECR/DECRBY through this client write
                    through: the integer reply becomes the key's GET copy. Any other write
                    through this client drops the key's copies once it has returned.
                    replicate with a replica_client reads from the replica instead, uncached.
  split             the key's S parts are the key itself (part 0) and S-1 sub-keys;
                    INCR/INCRBY/DECR/DECRBY/INCRBYFLOAT go to one part chosen at random;
                    GET returns the sum of the parts (one pipelined read).
  split_cache       split, with GET's sum cached like cache mode.
  isolate           every covered command on the key goes to isolate_client.

Staleness (cache modes): a read that starts at time t returns a value the origin held at or
after t - refresh_seconds. A cached copy is stamped with the time its fetch (or its counter
write) was SENT, served only while younger than refresh_seconds, and a caller joins an
in-flight fetch only if that fetch was sent less than refresh_seconds before the call.

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

Thread safety: a HotkeyClient may be shared by threads, as a redis.Redis may.
"""

import decimal
import logging
import random
import threading
import time

import redis

from .feed import CACHE_MODES, EMPTY, SPLIT_MODES, FeedFollower, FeedState
from .naming import has_hash_tag, sub_key_names

log = logging.getLogger("hotkeyd_client")

STAT_NAMES = ("cache_hits", "cache_misses", "origin_fetches", "split_writes", "folds",
              "fold_errors", "fallbacks", "isolated_calls", "feed_reconnects", "feed_events",
              "feed_resyncs", "ignored_entries")

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


def _sum_values(values):
    """GET of a split key: base + sub-keys as Redis would print the exact sum (integers as
    integers, other decimals without exponent), typed like the replies (bytes or str)."""
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
    that follower's own."""

    def __init__(self):
        self.state = EMPTY
        self.followers = []
        self._lock = threading.Lock()

    def update(self):
        with self._lock:
            states = [f.state for f in self.followers]
            self.state = states[0] if len(states) == 1 else FeedState.merged(states)


class _Flight:
    __slots__ = ("sent", "done", "value", "error")

    def __init__(self, sent):
        self.sent = sent
        self.done = threading.Event()
        self.value = None
        self.error = None


class _Slot:
    """One cached read of one key: the value, when its fetch was sent, the fetch in flight."""

    __slots__ = ("value", "sent", "flight")

    def __init__(self):
        self.value = None
        self.sent = None
        self.flight = None


def _copy(value):
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value


class HotkeyClient:
    """See the module comment. `redis_client` is the origin; `feed_url` hotkeyd's HTTP
    server (e.g. "http://127.0.0.1:10110"), a list or tuple of them (one hotkeyd per Redis
    Cluster node: the kit acts on the union of their entries; where two feeds name the same
    key or prefix, the entry of the feed listed first is used), or None to pass everything
    through.

    Keyword arguments: isolate_client (where isolate-mode keys go; without one, they stay on
    redis_client), replica_client (replicate-mode reads), auth ((user, password): basic
    auth, which the feed needs to send raw keys when it labels keys by hash or prefix),
    ssl_context (https feeds), sweep_seconds (how often leases are checked and folds run),
    encoding (how str keys become bytes; default: the wrapped client's), start (False:
    call start() yourself), clock and rng (for tests)."""

    def __init__(self, redis_client, feed_url, *, isolate_client=None, replica_client=None,
                 auth=None, ssl_context=None, sweep_seconds=0.1, encoding=None, start=True,
                 clock=time.monotonic, rng=None):
        self._r = redis_client
        self._isolate = isolate_client
        self._replica = replica_client
        self._clock = clock
        self._random = (rng or random.Random()).random
        # get_encoder(): redis.Redis and redis.RedisCluster alike.
        get_encoder = getattr(redis_client, "get_encoder", None)
        encoder = get_encoder() if get_encoder is not None else None
        self._encoding = encoding or getattr(encoder, "encoding", "utf-8")
        self._decode = bool(getattr(encoder, "decode_responses", False))
        self._cluster = isinstance(redis_client, redis.RedisCluster)
        self._lock = threading.Lock()       # cache, stats, fold bookkeeping
        self._stats = dict.fromkeys(STAT_NAMES, 0)
        self._cache = {}                    # {key bytes: {read: _Slot}}
        self._folding = {}                  # {key bytes: Entry} retired split entries
        self._fold_queue = []
        self._fold_failed = set()           # entries whose fold failed (logged once each)
        self._fold_script = redis_client.register_script(FOLD_LUA)
        self._warned = set()
        self._sweep_seconds = sweep_seconds
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._sweeper = None
        self._feed = _Feeds()
        urls = [feed_url] if isinstance(feed_url, str) else list(feed_url or ())
        for url in urls:
            self._feed.followers.append(FeedFollower(
                url, on_retire=self._on_retire, on_publish=self._feed.update,
                namer=self._sub_key_names, stats=self._stats, stats_lock=self._lock,
                auth=auth, ssl_context=ssl_context, clock=clock))
        if urls:
            self._sweeper = threading.Thread(target=self._sweep_loop, name="hotkeyd-sweep",
                                             daemon=True)
            if start:
                self.start()

    # ------------------------------------------------------------------ public

    def start(self):
        for f in self._feed.followers:
            f.start()
        if self._sweeper is not None:
            self._sweeper.start()

    def close(self):
        """Stops following the feeds and runs the folds already due."""
        if self._sweeper is not None and not self._stopping.is_set():
            self._stopping.set()
            self._wake.set()
            for f in self._feed.followers:
                f.stop()
            self._sweeper.join(10)
        self._run_folds()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def stats(self):
        """The kit's counters (STAT_NAMES), as a new dict."""
        with self._lock:
            return dict(self._stats)

    def wait_synced(self, timeout=None):
        """True once every feed's stream is open and its snapshot applied (within `timeout`
        s in all)."""
        followers = self._feed.followers
        end = None if timeout is None else time.monotonic() + timeout
        for f in followers:
            left = None if end is None else max(0.0, end - time.monotonic())
            if not f.connected.wait(left):
                return False
        return bool(followers)

    def entries(self):
        """The entries held now (live or not yet swept), the union over the feeds, for
        inspection."""
        return self._feed.state.entries()

    @property
    def redis(self):
        """The wrapped client."""
        return self._r

    def __getattr__(self, name):
        # Only reached for attributes HotkeyClient does not define: delegate unchanged.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._r, name)

    # ------------------------------------------------------------------ lookup

    def _state(self):
        return self._feed.state

    def _sub_key_names(self, key, split_factor):
        """The followers' namer: with a RedisCluster client and an untagged key, from the
        client's slot -> node map as it is now (naming.sub_key_names)."""
        if self._cluster and not has_hash_tag(key):
            return sub_key_names(key, split_factor, self._slot_nodes())
        return sub_key_names(key, split_factor)

    def _slot_nodes(self):
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

    def _kb(self, key):
        if isinstance(key, bytes):
            return key
        if isinstance(key, str):
            return key.encode(self._encoding)
        if isinstance(key, memoryview):
            return key.tobytes()
        if isinstance(key, (int, float)) and not isinstance(key, bool):
            return repr(key).encode()
        raise redis.exceptions.DataError(f"invalid key type {type(key).__name__}")

    def _lookup(self, key, st=None):
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
        e = self._folding.get(k) if self._folding else None
        return k, e, False

    def _count(self, name, n=1):
        with self._lock:
            self._stats[name] += n

    def _warn_once(self, what, msg):
        if what not in self._warned:
            self._warned.add(what)
            log.warning("%s", msg)

    def _target(self, e):
        if self._isolate is None:
            self._warn_once("no_isolate", "hotkeyd feed names isolate-mode keys but the "
                            "HotkeyClient has no isolate_client: they stay on redis_client")
            return self._r
        self._count("isolated_calls")
        return self._isolate

    # ------------------------------------------------------------------ cache

    def _invalidate(self, k):
        if self._cache:
            with self._lock:
                self._cache.pop(k, None)

    def _cached(self, e, k, read, fetch):
        now = self._clock()
        leader = False
        with self._lock:
            per = self._cache.get(k)
            if per is None:
                per = self._cache[k] = {}
            slot = per.get(read)
            if slot is None:
                slot = per[read] = _Slot()
            if slot.sent is not None and now - slot.sent < e.refresh:
                self._stats["cache_hits"] += 1
                return _copy(slot.value)
            self._stats["cache_misses"] += 1
            flight = slot.flight
            if flight is None or now - flight.sent >= e.refresh:
                flight = slot.flight = _Flight(self._clock())
                self._stats["origin_fetches"] += 1
                leader = True
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            return _copy(flight.value)
        try:
            flight.value = fetch()
        except BaseException as err:
            flight.error = err
            raise
        finally:
            with self._lock:
                # A write that dropped the key's copies meanwhile detached `slot`: the value
                # may predate the write and is not kept.
                if self._cache.get(k, {}).get(read) is slot:
                    if flight.error is None and (slot.sent is None or flight.sent > slot.sent):
                        slot.value, slot.sent = flight.value, flight.sent
                    if slot.flight is flight:
                        slot.flight = None
            flight.done.set()
        return _copy(flight.value)

    def _read(self, method, key, read, *args):
        """A covered read: GET, HGET, HMGET, HGETALL."""
        k, e, live = self._lookup(key)
        if e is None:
            return getattr(self._r, method)(key, *args)
        mode = e.mode
        if mode in SPLIT_MODES and method == "get":
            if live and mode == "split_cache":
                return self._cached(e, k, read, lambda: self._split_get(k, e))
            return self._split_get(k, e)
        if not live:
            return getattr(self._r, method)(key, *args)
        if mode in CACHE_MODES:
            if mode == "replicate" and self._replica is not None:
                return getattr(self._replica, method)(key, *args)
            return self._cached(e, k, read, lambda: getattr(self._r, method)(key, *args))
        if mode == "isolate":
            return getattr(self._target(e), method)(key, *args)
        return getattr(self._r, method)(key, *args)

    # ------------------------------------------------------------------ split

    def _split_get(self, k, e):
        """The sum of the parts: the key and its sub-keys (and those of a retired entry
        for the key not yet folded), in one pipeline."""
        subs = e.sub_keys
        f = self._folding.get(k) if self._folding else None
        if f is not None and f is not e:
            subs = tuple(dict.fromkeys(subs + f.sub_keys))
        pipe = self._r.pipeline(transaction=False)
        pipe.get(k)
        for s in subs:
            pipe.get(s)
        return _sum_values(pipe.execute())

    def _split_write(self, e, method, amount):
        """Writes one of the S parts (part 0 is the key itself) and returns its reply, or
        None when the entry has been retired (the caller then writes the key)."""
        with e.cond:
            if e.retired:
                return None
            e.inflight += 1
        try:
            part = e.parts[int(self._random() * e.split_factor)]
            reply = getattr(self._r, method)(part, amount)
        finally:
            with e.cond:
                e.inflight -= 1
                if not e.inflight:
                    e.cond.notify_all()
        self._count("split_writes")
        return reply

    def _counter(self, method, split_method, name, amount):
        if self._feed.state.active or self._folding or self._cache:
            k, e, live = self._lookup(name)
            if e is not None:
                if e.mode in SPLIT_MODES:
                    if live:
                        reply = self._split_write(e, split_method, amount)
                        if reply is not None:
                            return reply
                elif live and e.mode == "isolate":
                    return getattr(self._target(e), method)(name, amount)
                elif (live and method != "incrbyfloat" and e.mode in CACHE_MODES
                      and (e.mode == "cache" or self._replica is None)):
                    sent = self._clock()
                    reply = getattr(self._r, method)(name, amount)
                    self._write_through(k, reply, sent)
                    return reply
            reply = getattr(self._r, method)(name, amount)
            self._invalidate(k)
            return reply
        return getattr(self._r, method)(name, amount)

    def _write_through(self, k, reply, sent):
        """Keeps a counter write's integer reply as the key's GET copy, stamped `sent`, the
        time the write was sent, and drops the key's other cached reads.

        The staleness bound still holds: the origin held `reply` when it ran the write, at
        or after `sent`, so a read at t that this copy serves (t - sent < refresh) returns a
        value the origin held at or after t - refresh. A fetch in flight sent before
        `sent` never overwrites the copy (_cached keeps the newer stamp), and a copy
        stamped later than `sent` is kept: its value is no older."""
        if not isinstance(reply, int) or isinstance(reply, bool):
            self._invalidate(k)
            return
        text = str(reply) if self._decode else str(reply).encode()
        with self._lock:
            per = self._cache.get(k)
            slot = per.get(("get",)) if per else None
            if slot is None:
                slot = _Slot()
            self._cache[k] = {("get",): slot}
            if slot.sent is None or sent > slot.sent:
                slot.value, slot.sent = text, sent

    def incr(self, name, amount=1):
        """In split mode the reply is the chosen part's value, not the total."""
        return self._counter("incr", "incrby", name, amount)

    def incrby(self, name, amount=1):
        return self._counter("incrby", "incrby", name, amount)

    def decr(self, name, amount=1):
        return self._counter("decr", "decrby", name, amount)

    def decrby(self, name, amount=1):
        return self._counter("decrby", "decrby", name, amount)

    def incrbyfloat(self, name, amount=1.0):
        return self._counter("incrbyfloat", "incrbyfloat", name, amount)

    # ------------------------------------------------------------------ retire and fold

    def _on_retire(self, e, expired=False):
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

    def _sweep_loop(self):
        while not self._stopping.is_set():
            self._wake.wait(self._sweep_seconds)
            self._wake.clear()
            try:
                for f in self._feed.followers:
                    f.expire()
                self._run_folds()
                if self._cache:
                    self._drop_cold_copies()
            except Exception:  # noqa: BLE001 (the sweeper must outlive any one failure)
                log.exception("hotkeyd_client: sweep failed")

    def _drop_cold_copies(self):
        st = self._state()
        with self._lock:
            for k in list(self._cache):
                e = st.find(k)
                if e is None or e.mode not in ("cache", "replicate", "split_cache"):
                    del self._cache[k]

    def _run_folds(self):
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
                if e not in self._fold_failed:
                    self._fold_failed.add(e)
                    log.warning("hotkeyd_client: folding %r failed (%s); retrying at each "
                                "sweep", e.key, err)
                self._count("fold_errors")
                failed.append(e)
                continue
            with self._lock:
                self._stats["folds"] += 1
                if self._folding.get(e.key) is e:
                    del self._folding[e.key]
            self._fold_failed.discard(e)
        if failed:
            with self._lock:
                self._fold_queue.extend(failed)

    def _fold(self, e):
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

    def get(self, name):
        if self._feed.state.active or self._folding:
            return self._read("get", name, ("get",))
        return self._r.get(name)

    def hget(self, name, key):
        if self._feed.state.active:
            return self._read("hget", name, ("hget", key), key)
        return self._r.hget(name, key)

    def hgetall(self, name):
        if self._feed.state.active:
            return self._read("hgetall", name, ("hgetall",))
        return self._r.hgetall(name)

    def hmget(self, name, keys, *args):
        if self._feed.state.active:
            fields = tuple(keys) if isinstance(keys, (list, tuple)) else (keys,)
            fields += args
            return self._read("hmget", name, ("hmget",) + fields, list(fields))
        return self._r.hmget(name, keys, *args)

    def mget(self, keys, *args):
        if not (self._feed.state.active or self._folding):
            return self._r.mget(keys, *args)
        names = list(keys) if isinstance(keys, (list, tuple)) else [keys]
        names += args
        out = [None] * len(names)
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

    def delete(self, *names):
        return self._multi_key_write("delete", names)

    def unlink(self, *names):
        return self._multi_key_write("unlink", names)

    def _multi_key_write(self, method, names):
        if not (self._feed.state.active or self._folding or self._cache):
            return getattr(self._r, method)(*names)
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


def _first_key_command(method, write):
    """A covered command whose first argument is the one key it touches: routed to
    isolate_client for isolate-mode keys; a write drops the key's cached copies after it
    returns."""

    def command(self, name, *args, **kwargs):
        if self._feed.state.active or self._folding or (write and self._cache):
            k, e, live = self._lookup(name)
            if e is not None and live and e.mode == "isolate":
                return getattr(self._target(e), method)(name, *args, **kwargs)
            reply = getattr(self._r, method)(name, *args, **kwargs)
            if write:
                self._invalidate(k)
            return reply
        return getattr(self._r, method)(name, *args, **kwargs)

    command.__name__ = method
    command.__doc__ = f"redis.Redis.{method}, routed by the feed."
    return command


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

for _m in FIRST_KEY_WRITES:
    setattr(HotkeyClient, _m, _first_key_command(_m, True))
for _m in FIRST_KEY_READS:
    setattr(HotkeyClient, _m, _first_key_command(_m, False))
del _m
