"""aio.py: AsyncHotkeyClient, HotkeyClient for redis.asyncio clients.

The same fixes, feeds, leases, demand reports and counters as HotkeyClient (client.py's
module comment), with every covered command a coroutine, as redis.asyncio's are:

    r = AsyncHotkeyClient(redis.asyncio.Redis(...), "http://127.0.0.1:10110")
    await r.get("user:42")
    await r.aclose()

What differs:
- the feeds are followed, leases checked and demand reported on threads, as in HotkeyClient
  (none of them touches Redis); folds run on the event loop, in a task started by the
  constructor, which must therefore run inside the loop that will use the client;
- a fold whose key still has split writes in flight waits for the next sweep instead of
  blocking (the writes are coroutines on the same loop);
- single-flight fetches are shared as asyncio futures; a client is used from one loop;
- tracking=True is not offered (tracking.py reads its connection on a thread).

Thread safety: one event loop per client; the feed threads hand it immutable tables.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple

import redis

from .client import HotkeyClient, KeyT, _copy, _sum_values
from .feed import SPLIT_MODES, Entry
from .pipeline import SplitAwarePipeline, make_split_aware
from .topology import ClusterFeeds


class _AFlight:
    __slots__ = ("sent", "future")

    def __init__(self, sent: float, future: "asyncio.Future[Any]"):
        self.sent = sent
        self.future = future


class AsyncSplitAwarePipeline(SplitAwarePipeline):
    """SplitAwarePipeline for redis.asyncio pipelines, whose execute, reset and immediate
    commands are coroutines."""

    async def immediate_execute_command(self, *args: Any, **options: Any) -> Any:
        self._hk_refuse_watched(args)
        return await super().immediate_execute_command(*args, **options)

    async def reset(self) -> None:  # type: ignore[override]
        self._hk_cmds = []
        base: Any = super(SplitAwarePipeline, self)
        await base.reset()

    async def execute(self, raise_on_error: bool = True) -> List[Any]:  # type: ignore
        base: Any = super(SplitAwarePipeline, self)
        plans, claims, touched = self._hk_stage(base)
        try:
            replies = await base.execute(raise_on_error)
        finally:
            self._hk_done(claims, touched)
        return self._hk_combine(plans, replies)

    async def __aexit__(self, *exc: Any) -> None:
        await self.reset()


class AsyncHotkeyClient(HotkeyClient):
    """See the module comment; the arguments are HotkeyClient's (tracking excepted)."""

    def __init__(self, redis_client: Any, feed_url: Any, **kwargs: Any):
        if kwargs.get("tracking"):
            raise ValueError("tracking=True needs HotkeyClient and a redis.Redis client")
        if isinstance(feed_url, ClusterFeeds) and feed_url.client is None:
            raise ValueError("AsyncHotkeyClient with ClusterFeeds: give ClusterFeeds(..., "
                             "client=redis.RedisCluster(...)) to read the topology through")
        self._fold_task: Optional["asyncio.Task[None]"] = None
        super().__init__(redis_client, feed_url, **kwargs)

    def start(self) -> None:
        super().start()
        if self._fold_task is None and self._threads:
            self._fold_task = asyncio.get_running_loop().create_task(self._fold_loop())

    async def aclose(self) -> None:
        """Stops following the feeds and runs the folds already due."""
        task, self._fold_task = self._fold_task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        await asyncio.get_running_loop().run_in_executor(None, super().close)
        await self._run_folds_async()

    def close(self) -> None:
        raise TypeError("AsyncHotkeyClient: use `await client.aclose()`")

    async def __aenter__(self) -> "AsyncHotkeyClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ folds

    def _run_folds(self) -> None:
        """The sweeper thread's folds: on the loop instead (_fold_loop)."""

    async def _fold_loop(self) -> None:
        while True:
            await asyncio.sleep(self._sweep_seconds)
            try:
                await self._run_folds_async()
            except Exception:  # noqa: BLE001 (the loop must outlive any one failure)
                logging.getLogger("hotkeyd_client").exception("hotkeyd_client: fold failed")

    async def _run_folds_async(self) -> None:
        with self._lock:
            queue, self._fold_queue = self._fold_queue, []
        later = []
        for e in queue:
            with e.cond:
                e.retired = True
                busy = e.inflight > 0
            if busy:
                later.append(e)
                continue
            try:
                await self._fold_async(e)
            except Exception:  # noqa: BLE001 (kept and retried, whatever failed)
                self._count("fold_errors")
                later.append(e)
                continue
            with self._lock:
                self._stats["folds"] += 1
                if self._folding.get(e.key) is e:
                    del self._folding[e.key]
        if later:
            with self._lock:
                self._fold_queue.extend(later)

    async def _fold_async(self, e: Entry) -> None:
        keys = [e.key, *e.sub_keys]
        if not self._cluster:
            await self._fold_script(keys=keys)
            return
        from .client import FOLD_LUA
        from .naming import has_hash_tag
        if has_hash_tag(e.key):
            await self._r.eval(FOLD_LUA, len(keys), *keys)
            return
        for sub in e.sub_keys:
            v = await self._r.getdel(sub)
            if v is None:
                continue
            try:
                await self._r.incrby(e.key, v)
            except redis.exceptions.ResponseError:
                await self._r.incrbyfloat(e.key, v)

    # ------------------------------------------------------------------ cache

    async def _acached(self, e: Entry, k: bytes, read: Tuple[Any, ...],
                       fetch: Callable[[], Awaitable[Any]], refresh: float) -> Any:
        now = self._clock()
        with self._lock:
            slot, hit = self._slot_locked(e, k, read, now, refresh)
            if hit:
                return _copy(slot.value)
            flight: Any = slot.flight
            leader = flight is None or now - flight.sent >= refresh
            if leader:
                flight = _AFlight(self._clock(), asyncio.get_running_loop().create_future())
                slot.flight = flight
                self._stats["origin_fetches"] += 1
        if not leader:
            return _copy(await asyncio.shield(flight.future))
        try:
            value = await fetch()
        except BaseException as err:
            with self._lock:
                if slot.flight is flight:
                    slot.flight = None
            if not flight.future.done():
                flight.future.set_exception(err)
                flight.future.exception()  # retrieved: waiters re-raise it, no warning
            raise
        with self._lock:
            if self._cache.get(k, {}).get(read) is slot and (slot.sent is None
                                                             or flight.sent > slot.sent):
                slot.value, slot.sent = value, flight.sent
            if slot.flight is flight:
                slot.flight = None
        flight.future.set_result(value)
        return _copy(value)

    async def _read(self, method: str, key: Any, read: Tuple[Any, ...], *args: Any) -> Any:
        k, e, live = self._lookup(key)
        if e is None or not live and e.mode not in SPLIT_MODES:
            return await getattr(self._r, method)(key, *args)
        mode = e.mode
        if mode in SPLIT_MODES and method == "get":
            se = e
            if live and mode == "split_cache":
                return await self._acached(se, k, read, lambda: self._split_get(k, se),
                                           se.refresh)
            return await self._split_get(k, se)
        if not live:
            return await getattr(self._r, method)(key, *args)
        if mode == "replicate" and self._replica is not None:
            return await getattr(self._replica, method)(key, *args)
        ttl = self._refresh_of(e)
        if mode in ("cache", "replicate") and ttl:
            def fetch() -> Awaitable[Any]:
                coro: Awaitable[Any] = getattr(self._r, method)(key, *args)
                return coro
            return await self._acached(e, k, read, fetch, ttl)
        if mode == "replicate":
            self._count("unapplied")
        if mode == "isolate":
            return await getattr(self._target(e), method)(key, *args)
        return await getattr(self._r, method)(key, *args)

    async def _split_get(self, k: bytes, e: Entry) -> Any:
        pipe = self._r.pipeline(transaction=False)
        for s in self._split_parts_read(k, e):
            pipe.get(s)
        return _sum_values(await pipe.execute())

    async def _counter(self, method: str, split_method: str, name: KeyT,
                       amount: Any) -> Any:
        if not (self._feed.state.active or self._folding or self._cache):
            return await getattr(self._r, method)(name, amount)
        k, e, live = self._lookup(name)
        if e is not None and live:
            if e.mode in SPLIT_MODES:
                index = self._choose_part(e)
                if index is not None:
                    try:
                        return await getattr(self._r, split_method)(e.parts[index], amount)
                    finally:
                        self._release_part(e, k, index)
            elif e.mode == "isolate":
                return await getattr(self._target(e), method)(name, amount)
            elif (method != "incrbyfloat" and self._refresh_of(e)
                  and (e.mode != "replicate" or self._replica is None)):
                sent = self._clock()
                reply = await getattr(self._r, method)(name, amount)
                self._write_through(e, k, reply, sent)
                return reply
        reply = await getattr(self._r, method)(name, amount)
        self._invalidate(k)
        return reply

    async def _first_key(self, method: str, write: bool, name: KeyT,
                         args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        if not (self._feed.state.active or self._folding or (write and self._cache)):
            return await getattr(self._r, method)(name, *args, **kwargs)
        k, e, live = self._lookup(name)
        if e is not None and live and e.mode == "isolate":
            return await getattr(self._target(e), method)(name, *args, **kwargs)
        reply = await getattr(self._r, method)(name, *args, **kwargs)
        if write:
            self._invalidate(k)
        return reply

    async def mget(self, keys: Any, *args: Any) -> List[Any]:  # type: ignore[override]
        names = list(keys) if isinstance(keys, (list, tuple)) else [keys]
        names += args
        if not (self._feed.state.active or self._folding):
            return list(await self._r.mget(names))
        out: List[Any] = [None] * len(names)
        plain = []
        for i, n in enumerate(names):
            _, e, _ = self._lookup(n)
            if e is None:
                plain.append(i)
            else:
                out[i] = await self._read("get", n, ("get",))
        if plain:
            values = await self._r.mget([names[i] for i in plain])
            for i, v in zip(plain, values):
                out[i] = v
        return out

    async def _multi_key_write(self, method: str,  # type: ignore[override]
                               names: Sequence[KeyT]) -> int:
        plain, total = [], 0
        for n in names:
            k, e, live = self._lookup(n)
            if e is not None and e.mode in SPLIT_MODES:
                total += 1 if await getattr(self._r, method)(k, *e.sub_keys) else 0
            elif e is not None and live and e.mode == "isolate":
                total += await getattr(self._target(e), method)(n)
            else:
                plain.append(n)
        if plain:
            total += await getattr(self._r, method)(*plain)
        for n in names:
            self._invalidate(self._kb(n))
        return total

    # ------------------------------------------------------------------ pipelines

    def pipeline(self, transaction: Optional[bool] = None, shard_hint: Any = None) -> Any:
        pipe = self._r.pipeline(True if transaction is None else transaction, shard_hint)
        return make_split_aware(pipe, self, AsyncSplitAwarePipeline)

    async def transaction(self, func: Callable[[Any], Any],
                          *watches: KeyT, shard_hint: Any = None,
                          value_from_callable: bool = False,
                          watch_delay: Optional[float] = None) -> Any:
        async with self.pipeline(True, shard_hint) as pipe:
            while True:
                try:
                    if watches:
                        await pipe.watch(*watches)
                    func_value = func(pipe)
                    if asyncio.iscoroutine(func_value):
                        func_value = await func_value
                    exec_value = await pipe.execute()
                    return func_value if value_from_callable else exec_value
                except redis.exceptions.WatchError:
                    if watch_delay is not None and watch_delay > 0:
                        await asyncio.sleep(watch_delay)
                    continue


__all__ = ["AsyncHotkeyClient"]
