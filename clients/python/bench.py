"""bench.py: what HotkeyClient costs per call for a key that is not hot.

Compares, in one run and interleaved repeat by repeat, redis-py alone with the same call
through HotkeyClient, for GET, SET and INCR of keys the feed does not name:

  raw        redis.Redis against a local redis-server started here
  kit-empty  HotkeyClient following a feed whose set is empty
  kit-8empty HotkeyClient following eight feeds whose sets are empty (one hotkeyd per node
             of an 8-node cluster)
  kit-fed    HotkeyClient following a feed that names 1000 other keys and 8 prefixes
             (none matching), so every call does the full lookup

Two measurements: against the redis-server (what an application sees: the round trip
dominates), and against an in-process stub whose commands return at once (the kit's own
added cost, without the network's noise). Then the same for redis.asyncio: raw
redis.asyncio.Redis against AsyncHotkeyClient following the empty feed (akit-empty) and the
fed one (akit-fed), each call awaited in turn.

Usage: /usr/bin/python3 clients/python/bench.py [--calls N] [--repeats R]
(the stub runs 10 N calls per repeat)
Prints, per command and variant, microseconds per call: median, min and max over the
repeats, and the ratio of medians against raw.
"""

import argparse
import asyncio
import os
import statistics
import sys
import time

import redis
import redis.asyncio

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "tests"))
from fixtures import FeedServer, RedisServer, entry, wait_until  # noqa: E402

from hotkeyd_client import AsyncHotkeyClient, HotkeyClient  # noqa: E402


class StubRedis(redis.Redis):
    """A redis.Redis that never connects: commands return at once."""

    def execute_command(self, *args, **options):
        return b"1"


class StubAsyncRedis(redis.asyncio.Redis):
    """A redis.asyncio.Redis that never connects: commands return at once."""

    async def execute_command(self, *args, **options):
        return b"1"


def per_call_us(fn, calls):
    """(wall, this process's CPU) microseconds per call. CPU time leaves out the time spent
    waiting for redis-server, the part the shared machine makes noisy."""
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(calls):
        fn(i)
    return ((time.perf_counter() - t0) / calls * 1e6, (time.process_time() - c0) / calls * 1e6)


def run(title, clients, calls, repeats):
    ops = {
        "GET": lambda c: (lambda i: c.get(b"cold:%d" % (i & 1023))),
        "SET": lambda c: (lambda i: c.set(b"cold:%d" % (i & 1023), b"v")),
        "INCR": lambda c: (lambda i: c.incr(b"count:%d" % (i & 1023))),
    }
    print(f"\n{title}: {calls} calls x {repeats} repeats; us per call, median [min, max]; "
          f"ratio and difference of medians against raw")
    for op, make in ops.items():
        fns = {name: make(c) for name, c in clients.items()}
        for fn in fns.values():  # warm-up: connections, caches
            per_call_us(fn, min(calls, 2000))
        samples = {name: [] for name in fns}
        for _ in range(repeats):
            for name, fn in fns.items():
                samples[name].append(per_call_us(fn, calls))
        for col, what in ((0, "wall"), (1, "cpu ")):
            base = statistics.median(x[col] for x in samples["raw"])
            for name, s in samples.items():
                s = [x[col] for x in s]
                med = statistics.median(s)
                print(f"  {op:5} {what} {name:10} {med:8.3f} [{min(s):8.3f}, {max(s):8.3f}]"
                      f"  x{med / base:5.3f}  {med - base:+7.3f} us")


async def aper_call_us(fn, calls):
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(calls):
        await fn(i)
    return ((time.perf_counter() - t0) / calls * 1e6, (time.process_time() - c0) / calls * 1e6)


async def arun(title, clients, calls, repeats):
    ops = {
        "GET": lambda c: (lambda i: c.get(b"cold:%d" % (i & 1023))),
        "SET": lambda c: (lambda i: c.set(b"cold:%d" % (i & 1023), b"v")),
        "INCR": lambda c: (lambda i: c.incr(b"count:%d" % (i & 1023))),
    }
    print(f"\n{title}: {calls} calls x {repeats} repeats; us per call, median [min, max]; "
          f"ratio and difference of medians against raw")
    for op, make in ops.items():
        fns = {name: make(c) for name, c in clients.items()}
        for fn in fns.values():
            await aper_call_us(fn, min(calls, 2000))
        samples = {name: [] for name in fns}
        for _ in range(repeats):
            for name, fn in fns.items():
                samples[name].append(await aper_call_us(fn, calls))
        for col, what in ((0, "wall"), (1, "cpu ")):
            base = statistics.median(x[col] for x in samples["raw"])
            for name, smp in samples.items():
                smp = [x[col] for x in smp]
                med = statistics.median(smp)
                print(f"  {op:5} {what} {name:10} {med:8.3f} [{min(smp):8.3f}, "
                      f"{max(smp):8.3f}]  x{med / base:5.3f}  {med - base:+7.3f} us")


async def amain(args, server, empty, fed):
    for stub in (False, True):
        def make():
            return StubAsyncRedis() if stub else redis.asyncio.Redis(port=server.port)
        k_empty = AsyncHotkeyClient(make(), empty.url)
        k_fed = AsyncHotkeyClient(make(), fed.url, isolate_client=make())
        loop = asyncio.get_running_loop()
        for k in (k_empty, k_fed):
            assert await loop.run_in_executor(None, k.wait_synced, 10)
        await loop.run_in_executor(None, wait_until, lambda: len(k_fed.entries()) == 1008,
                                   10, "the fed kit's entries")
        raw = make()
        try:
            await arun("redis.asyncio, in-process stub (the kit's own cost)" if stub else
                       f"redis.asyncio, local redis-server {redis_version(server)}",
                       {"raw": raw, "akit-empty": k_empty, "akit-fed": k_fed},
                       args.calls * (10 if stub else 1), args.repeats)
            for k in (k_empty, k_fed):
                st = k.stats()
                assert st["cache_hits"] == st["split_writes"] == st["isolated_calls"] == 0
        finally:
            for k in (k_empty, k_fed):
                await k.aclose()
            for c in (raw, k_empty.redis, k_fed.redis):
                await c.close()
                await c.connection_pool.disconnect()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()

    server = RedisServer()
    empty = FeedServer(heartbeat=1.0)
    empties = [FeedServer(heartbeat=1.0) for _ in range(8)]
    fed = FeedServer(heartbeat=1.0)
    for i in range(1000):
        fed.put(entry(f"hot:{i}", ("cache", "split", "isolate")[i % 3]))
    for i in range(8):
        fed.put(entry(f"pinned{i}:", "cache", match="prefix"))
    kits = []
    try:
        for stub in (False, True):
            def make():
                return (StubRedis() if stub else server.client())
            k_empty = HotkeyClient(make(), empty.url)
            k_8empty = HotkeyClient(make(), [f.url for f in empties])
            k_fed = HotkeyClient(make(), fed.url, isolate_client=make())
            kits += [k_empty, k_8empty, k_fed]
            assert k_empty.wait_synced(10) and k_8empty.wait_synced(10)
            assert k_fed.wait_synced(10)
            wait_until(lambda: len(k_fed.entries()) == 1008, 10, "the fed kit's entries")
            run("in-process stub (the kit's own cost)" if stub else
                f"local redis-server {redis_version(server)}",
                {"raw": make(), "kit-empty": k_empty, "kit-8empty": k_8empty,
                 "kit-fed": k_fed},
                args.calls * (10 if stub else 1), args.repeats)
            for k in (k_empty, k_8empty, k_fed):
                s = k.stats()
                assert s["cache_hits"] == s["split_writes"] == s["isolated_calls"] == 0, s
        asyncio.run(amain(args, server, empty, fed))
    finally:
        for k in kits:
            k.close()
        empty.stop()
        for f in empties:
            f.stop()
        fed.stop()
        server.stop()


def redis_version(server):
    return server.client().info("server")["redis_version"]


if __name__ == "__main__":
    main()
