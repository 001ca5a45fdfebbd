"""measure_tracking.py: the staleness readers see through the kit's cache, with and without
server-assisted invalidation (HotkeyClient(tracking=True), tracking.py), and what tracking
costs the server.

One redis-server and one feed fixture naming one key in cache mode (refresh_seconds R). A
writer on another client SETs the key to 1, 2, 3, ... every `--write-interval` seconds,
recording when each SET returned; reader threads GET it through the kit as fast as they can,
recording when each GET started and what it returned. A read is stale when a later value's
SET had returned before the read started; its staleness is how long before: the read start
minus the return of the first SET it missed. Each mode runs the same load in turn.

Server cost, from INFO over each run: CPU seconds (used_cpu_user + used_cpu_sys), GET calls,
CLIENT CACHING calls, the tracking table (tracking_total_keys, tracking_total_items) at the
end of the run, and used_memory.

Usage: /usr/bin/python3 clients/python/measure_tracking.py [--seconds S] [--refresh R]
       [--write-interval W] [--readers N]   (with the kit importable: installed, or PYTHONPATH)
"""

import argparse
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "tests"))
from fixtures import FeedServer, RedisServer, entry, wait_until  # noqa: E402

from hotkeyd_client import HotkeyClient  # noqa: E402


def info_totals(r):
    info = r.info("all")
    cmd = r.info("commandstats")
    return {
        "cpu": float(info["used_cpu_user"]) + float(info["used_cpu_sys"]),
        "get": int(cmd.get("cmdstat_get", {}).get("calls", 0)),
        "caching": int(cmd.get("cmdstat_client|caching", {}).get("calls", 0)),
        "tracking_keys": int(info.get("tracking_total_keys", 0)),
        "tracking_items": int(info.get("tracking_total_items", 0)),
        "used_memory": int(info["used_memory"]),
    }


def run(server, feed, tracking, seconds, write_interval, readers):
    raw = server.client()
    raw.set("page", 0)
    kit = HotkeyClient(server.client(), feed.url, tracking=tracking, report_demand=False)
    try:
        wait_until(lambda: kit.entries(), 20, "the cache entry")
        if tracking:
            wait_until(kit._tracker.ready, 20, "the tracking connections")
        before = info_totals(raw)
        writes = [(0.0, 0)]  # (monotonic time the SET returned, value)
        reads = []
        stop = threading.Event()

        def writer():
            w = server.client()
            v = 0
            nxt = time.monotonic()
            while not stop.is_set():
                v += 1
                w.set("page", v)
                writes.append((time.monotonic(), v))
                nxt += write_interval
                time.sleep(max(0.0, nxt - time.monotonic()))

        def reader():
            mine = []
            while not stop.is_set():
                t = time.monotonic()
                mine.append((t, int(kit.get("page"))))
            reads.extend(mine)

        threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader)
                                                       for _ in range(readers)]
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        after = info_totals(raw)
        stats = kit.stats()
    finally:
        kit.close()
    times = [t for t, _ in writes]
    stale = []
    for t, v in reads:
        # writes[i] holds value i: the SET of v + 1 is the first the read missed, if it had
        # returned by t.
        i = v + 1
        if i < len(times) and times[i] <= t:
            stale.append(t - times[i])
    return reads, stale, before, after, stats


def pct(xs, q):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--refresh", type=float, default=1.0)
    ap.add_argument("--write-interval", type=float, default=0.01)
    ap.add_argument("--readers", type=int, default=4)
    a = ap.parse_args()
    server = RedisServer()
    feed = FeedServer(lease=10.0, heartbeat=0.5)
    feed.put(entry("page", "cache", refresh=a.refresh))
    try:
        print(f"redis-server {server.client().info()['redis_version']}: {a.readers} readers, "
              f"one writer every {a.write_interval * 1000:g} ms, refresh_seconds "
              f"{a.refresh:g}, {a.seconds:g} s a mode")
        print("mode          reads  stale%  staleness ms: median   p99     max | origin GETs"
              " | server: cpu s  GET calls  CLIENT CACHING  tracking keys/items  used_memory")
        for tracking in (False, True):
            reads, stale, b, e, st = run(server, feed, tracking, a.seconds, a.write_interval,
                                         a.readers)
            name = "tracking" if tracking else "refresh only"
            print(f"{name:12} {len(reads):7d} {100 * len(stale) / max(1, len(reads)):6.2f}"
                  f"  {statistics.median(stale) * 1e3 if stale else 0:20.2f}"
                  f" {pct(stale, 0.99) * 1e3:7.2f} {max(stale) * 1e3 if stale else 0:7.2f}"
                  f" | {st['origin_fetches']:11d}"
                  f" | {e['cpu'] - b['cpu']:13.2f} {e['get'] - b['get']:10d}"
                  f" {e['caching'] - b['caching']:15d} {e['tracking_keys']:9d}/"
                  f"{e['tracking_items']:<9d} {e['used_memory'] - b['used_memory']:+11d}")
    finally:
        feed.stop()
        server.stop()


if __name__ == "__main__":
    main()
