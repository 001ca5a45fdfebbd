"""The kit against real redis-servers and a feed fixture (fixtures.FeedServer).

Run: tests/clients/python_kit.sh (installs the kit in a venv and runs these against it).
Bounds are asserted as the kit states them (staleness against the refresh interval, fetch
counts, exact totals); no test compares a duration with a wall-clock threshold.
"""

import random
import threading
import time
import unittest

import redis
from redis.crc import key_slot

from fixtures import FeedServer, RedisCluster, RedisServer, entry, wait_until

from hotkeyd_client import HotkeyClient, sub_key_names
from hotkeyd_client.client import _sum_values
from hotkeyd_client.feed import SseParser

WAIT = 20  # seconds: the bound on every wait for the kit to see a feed change


class KitTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = RedisServer()

    @classmethod
    def tearDownClass(cls):
        cls.redis.stop()

    def setUp(self):
        self.raw = self.redis.client()
        self.raw.flushall()
        self.feed = FeedServer(lease=10.0, heartbeat=0.2)
        self.kits = []

    def tearDown(self):
        for k in self.kits:
            k.close()
        self.feed.stop()

    def kit(self, redis_client=None, feed_url=None, **kw):
        k = HotkeyClient(redis_client or self.redis.client(), feed_url or self.feed.url, **kw)
        self.kits.append(k)
        self.assertTrue(k.wait_synced(WAIT), "the kit never received the snapshot")
        return k

    def wait_mode(self, kit, key, mode):
        k = key.encode() if isinstance(key, str) else key
        wait_until(lambda: any(e.key == k and e.mode == mode for e in kit.entries()), WAIT,
                   f"{key!r} in {mode} mode")

    def wait_gone(self, kit, key):
        k = key.encode() if isinstance(key, str) else key
        wait_until(lambda: all(e.key != k for e in kit.entries()), WAIT, f"{key!r} gone")


class CacheTest(KitTest):
    def test_readers_never_see_a_value_older_than_the_refresh_interval(self):
        refresh = 0.2
        self.feed.put(entry("page", "cache", refresh=refresh))
        kit = self.kit()
        self.wait_mode(kit, "page", "cache")
        writes = []  # (monotonic time the SET returned, value), values increasing
        reads = []   # (monotonic time the GET was called, value)
        stop = threading.Event()

        def writer():
            w = self.redis.client()  # another client: the kit cannot invalidate its copy
            v = 0
            while not stop.is_set():
                v += 1
                w.set("page", v)
                writes.append((time.monotonic(), v))
                time.sleep(0.005)

        def reader():
            mine = []
            while not stop.is_set():
                t = time.monotonic()
                mine.append((t, int(kit.get("page") or 0)))
            reads.extend(mine)

        threads = [threading.Thread(target=writer)] + [
            threading.Thread(target=reader) for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(10 * refresh)
        stop.set()
        for t in threads:
            t.join()
        # Every write that had returned more than `refresh` before a read started is
        # visible to that read.
        i, newest_due, oldest_lag = 0, 0, 0
        for t, v in sorted(reads):
            while i < len(writes) and writes[i][0] <= t - refresh:
                newest_due = writes[i][1]
                i += 1
            self.assertGreaterEqual(v, newest_due, f"read at {t} saw {v}, {newest_due} due")
            oldest_lag = max(oldest_lag, newest_due - v)
        s = kit.stats()
        self.assertGreater(s["cache_hits"], 0)
        # The cache did serve copies older than the newest write (else it served nothing).
        self.assertLess(s["origin_fetches"], len(reads) / 10)

    def test_a_write_through_the_kit_is_read_back_at_once(self):
        self.feed.put(entry("profile", "cache", refresh=60))
        self.feed.put(entry(b"h", "cache", refresh=60))
        kit = self.kit()
        self.wait_mode(kit, "h", "cache")
        kit.set("profile", "v1")
        self.assertEqual(kit.get("profile"), b"v1")
        self.assertEqual(kit.get("profile"), b"v1")  # a hit
        kit.set("profile", "v2")
        self.assertEqual(kit.get("profile"), b"v2")
        kit.hset("h", "f", "1")
        self.assertEqual(kit.hgetall("h"), {b"f": b"1"})
        kit.hset("h", mapping={"f": "2", "g": "3"})
        self.assertEqual(kit.hget("h", "f"), b"2")
        self.assertEqual(kit.hmget("h", ["f", "g"]), [b"2", b"3"])
        self.assertEqual(kit.mget(["profile", "nothot", "h2"]), [b"v2", None, None])
        kit.delete("profile")
        self.assertIsNone(kit.get("profile"))
        self.assertGreater(kit.stats()["cache_hits"], 0)

    def test_replicate_reads_go_to_the_replica_client(self):
        replica = RedisServer()
        self.addCleanup(replica.stop)
        self.feed.put(entry("cat", "replicate", refresh=60))
        kit = self.kit(replica_client=replica.client())
        self.wait_mode(kit, "cat", "replicate")
        self.raw.set("cat", "primary")
        replica.client().set("cat", "replica")  # a stand-in for a replica's copy
        self.assertEqual(kit.get("cat"), b"replica")

    def test_replicate_without_a_replica_stays_plain_unless_asked_to_cache(self):
        # hotkeyd sends no refresh_seconds for replicate: without a replica_client the kit
        # has no copy to serve and no interval to keep one for, so reads stay plain...
        self.feed.put(entry("cat", "replicate"))
        kit = self.kit()
        self.wait_mode(kit, "cat", "replicate")
        (info,) = kit.entries()
        self.assertIsNone(info.refresh_seconds)
        self.raw.set("cat", "a")
        gets = self.redis.calls("get")
        self.assertEqual(kit.get("cat"), b"a")
        self.raw.set("cat", "b")
        self.assertEqual(kit.get("cat"), b"b")
        self.assertEqual(self.redis.calls("get") - gets, 2)
        self.assertEqual(kit.stats()["unapplied"], 2)
        self.assertEqual(kit.stats()["cache_hits"], 0)
        # ... unless the application names the copy's age itself.
        cached = self.kit(replicate_cache_seconds=60)
        self.wait_mode(cached, "cat", "replicate")
        self.assertEqual(cached.get("cat"), b"b")
        self.raw.set("cat", "c")
        self.assertEqual(cached.get("cat"), b"b")
        self.assertEqual(cached.stats()["cache_hits"], 1)

    def test_concurrent_misses_make_one_origin_fetch(self):
        n = 16
        gate = threading.Event()

        class GatedRedis(redis.Redis):
            """A real client whose GETs wait for the test's gate, so that all N misses are
            certainly concurrent."""

            def get(self, name):
                gate.wait(WAIT)
                return super().get(name)

        self.raw.set("hot", "42")
        self.feed.put(entry("hot", "cache", refresh=60))
        kit = self.kit(self.redis.client(GatedRedis))
        self.wait_mode(kit, "hot", "cache")
        gets_before = self.redis.calls("get")
        results = []
        threads = [threading.Thread(target=lambda: results.append(kit.get("hot")))
                   for _ in range(n)]
        for t in threads:
            t.start()
        wait_until(lambda: kit.stats()["cache_misses"] == n, WAIT, "all misses")
        gate.set()
        for t in threads:
            t.join()
        self.assertEqual(results, [b"42"] * n)
        self.assertEqual(kit.stats()["origin_fetches"], 1)
        self.assertEqual(self.redis.calls("get") - gets_before, 1)

    def test_lease_expiry_falls_back_to_plain_calls(self):
        self.feed.lease = 1.0
        self.feed.put(entry("cfg", "cache", refresh=60))
        kit = self.kit()
        self.wait_mode(kit, "cfg", "cache")
        self.raw.set("cfg", "a")
        self.assertEqual(kit.get("cfg"), b"a")
        self.raw.set("cfg", "b")
        self.assertEqual(kit.get("cfg"), b"a")  # the copy, renewed by heartbeats
        self.feed.reachable.clear()             # hotkeyd partitioned away
        wait_until(lambda: kit.stats()["fallbacks"] == 1, WAIT, "the lease to run out")
        # The stream fell silent (no heartbeat for 3 intervals): the kit has left it.
        wait_until(lambda: kit.stats()["feed_reconnects"] >= 1, WAIT, "a reconnect")
        self.assertEqual(kit.entries(), [])
        gets = self.redis.calls("get")
        self.assertEqual(kit.get("cfg"), b"b")
        self.assertEqual(kit.get("cfg"), b"b")
        self.assertEqual(self.redis.calls("get") - gets, 2)  # plain: every call to Redis


    def test_counters_write_through_to_the_copy(self):
        self.feed.put(entry("hits", "cache", refresh=60))
        self.feed.put(entry("pv", "cache", refresh=60))
        kit = self.kit()
        dec = self.kit(self.redis.client(decode_responses=True))
        for k in (kit, dec):
            self.wait_mode(k, "pv", "cache")
        self.raw.set("hits", 10)
        gets = self.redis.calls("get")
        self.assertEqual(kit.get("hits"), b"10")  # the first read: the one origin fetch
        want = 10
        for i in range(20):
            n = i % 5 + 1
            reply = [kit.incr, kit.incrby, kit.decr, kit.decrby][i % 4]("hits", n)
            want += -n if i % 4 >= 2 else n
            self.assertEqual(reply, want)
            self.assertEqual(kit.get("hits"), b"%d" % want)  # the written-through copy
            self.assertEqual(kit.mget("hits", "cold"), [b"%d" % want, None])
        s = kit.stats()
        self.assertEqual((s["origin_fetches"], s["cache_hits"]), (1, 40))
        self.assertEqual(self.redis.calls("get") - gets, 1)
        # Typed like the wrapped client's replies.
        self.assertEqual(dec.incrby("pv", 5), 5)
        self.assertEqual(dec.get("pv"), "5")
        self.assertEqual(dec.stats()["origin_fetches"], 0)
        # INCRBYFLOAT and the other writes still drop the copy: the next read fetches.
        kit.incrbyfloat("hits", 0.5)
        self.assertEqual(kit.get("hits"), b"%d.5" % want)
        kit.set("hits", 3)
        self.assertEqual(kit.get("hits"), b"3")
        self.assertEqual(kit.stats()["origin_fetches"], 3)

    def test_a_fetch_sent_before_a_counter_write_never_replaces_its_copy(self):
        fetched, gate = threading.Event(), threading.Event()

        class SlowRedis(redis.Redis):
            """A real client whose GET reply arrives only when the test opens the gate."""

            def get(self, name):
                v = super().get(name)
                fetched.set()
                gate.wait(WAIT)
                return v

        self.raw.set("c", 1)
        self.feed.put(entry("c", "cache", refresh=60))
        kit = self.kit(self.redis.client(SlowRedis))
        self.wait_mode(kit, "c", "cache")
        out = []
        reader = threading.Thread(target=lambda: out.append(kit.get("c")))
        reader.start()
        fetched.wait(WAIT)                      # the origin has answered 1
        self.assertEqual(kit.incr("c"), 2)      # sent after that fetch
        self.assertEqual(kit.get("c"), b"2")
        gate.set()
        reader.join()
        self.assertEqual(out, [b"1"])
        self.assertEqual(kit.get("c"), b"2")    # the older fetch did not replace the copy
        self.assertEqual(kit.stats()["origin_fetches"], 1)


class SplitTest(KitTest):
    def test_split_writes_spread_and_get_adds_them_up(self):
        self.feed.put(entry("ctr", "split", split=4))
        kit = self.kit(rng=random.Random(7))
        self.wait_mode(kit, "ctr", "split")
        self.raw.set("ctr", 100)
        for _ in range(200):
            kit.incr("ctr")
        kit.decrby("ctr", 50)
        subs = sub_key_names(b"ctr", 4)
        self.assertEqual(len(subs), 3)  # the key itself is part 0
        self.assertTrue(all(self.raw.exists(n) for n in subs))
        self.assertNotEqual(self.raw.get("ctr"), b"100")   # part 0 takes writes too
        self.assertEqual(kit.get("ctr"), b"250")           # 100 + 200 - 50
        self.assertEqual(kit.mget("ctr", "x"), [b"250", None])
        self.assertEqual(kit.stats()["split_writes"], 201)
        # One GET reads the key once and each sub-key once.
        gets = self.redis.calls("get")
        kit.get("ctr")
        self.assertEqual(self.redis.calls("get") - gets, 4)
        self.assertEqual(len(self.raw.keys("ctr*")), 4)

    def test_replies_keep_the_wrapped_clients_types(self):
        self.feed.put(entry("s", "split", split=3))
        self.feed.put(entry("c", "cache"))
        kit = self.kit(self.redis.client(decode_responses=True))
        self.wait_mode(kit, "c", "cache")
        kit.incrby("s", 7)
        kit.incrby(b"s", 5)  # bytes and str name the same key
        kit.set("c", "x")
        self.assertEqual(kit.mget("s", "c"), ["12", "x"])
        self.assertEqual(kit.get("c"), "x")

    def test_split_cache_caches_the_sum(self):
        self.feed.put(entry("likes", "split_cache", split=4, refresh=60))
        kit = self.kit()
        self.wait_mode(kit, "likes", "split_cache")
        for _ in range(10):
            kit.incr("likes")
        self.assertEqual(kit.get("likes"), b"10")
        kit.incr("likes")
        self.assertEqual(kit.get("likes"), b"10")  # the cached sum, younger than refresh
        s = kit.stats()
        self.assertEqual((s["origin_fetches"], s["cache_hits"]), (1, 1))

    def test_a_write_through_that_returns_after_the_fix_changed_is_not_the_new_fixs_copy(self):
        # An INCR sent under cache returns after the key went split_cache, and another app
        # server has written a part meanwhile: its reply is the key's own value, not the
        # total, and no read under split_cache may serve it.
        self.feed.put(entry("n", "cache", refresh=60))
        replied, release = threading.Event(), threading.Event()

        class HeldIncr:  # the INCR's reply held on its way back
            def __init__(self, r):
                self._r = r

            def __getattr__(self, name):
                return getattr(self._r, name)

            def incr(self, name, amount=1):
                reply = self._r.incr(name, amount)
                replied.set()
                release.wait(WAIT)
                return reply

        kit = self.kit(HeldIncr(self.redis.client()))
        self.wait_mode(kit, "n", "cache")
        writer = threading.Thread(target=kit.incr, args=("n",))
        writer.start()
        self.assertTrue(replied.wait(WAIT))
        self.feed.put(entry("n", "split_cache", split=4, refresh=60))
        self.wait_mode(kit, "n", "split_cache")
        self.raw.incrby(sub_key_names(b"n", 4)[0], 5)
        release.set()
        writer.join(WAIT)
        self.assertEqual(kit.get("n"), b"6")  # the sum of the parts, not the held reply, 1
        self.assertEqual(kit.get("n"), b"6")  # and that sum is the copy
        self.assertEqual(kit.stats()["cache_hits"], 1)

    def test_totals_are_exact_across_split_and_fold_back_with_concurrent_writers(self):
        self.feed.lease = 1.0
        kits = [self.kit(), self.kit()]  # two app processes' clients
        ledger = [0] * 8
        stop = threading.Event()

        def writer(i):
            kit, rng = kits[i % 2], random.Random(i)
            while not stop.is_set():
                n = rng.randint(-3, 10)
                kit.incrby("total", n)
                ledger[i] += n

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()

        def stop_writers():
            stop.set()
            for t in threads:
                t.join()
        self.addCleanup(stop_writers)
        steps = [
            lambda: self.feed.put(entry("total", "split", split=4)),
            lambda: self.feed.remove("total"),
            lambda: self.feed.put(entry("total", "split_cache", split=4, refresh=0.1)),
            lambda: self.feed.put(entry("total", "split", split=8)),  # a change: S=4 folds
            lambda: self.feed.reachable.clear(),                      # lease expiry folds
        ]
        for step in steps:
            step()
            time.sleep(0.3)
        wait_until(lambda: all(k.entries() == [] for k in kits), WAIT, "expiry")
        self.feed.reachable.set()
        stop.set()
        for t in threads:
            t.join()
        for k in kits:
            wait_until(lambda: not k._folding, WAIT, "the folds")
        self.assertEqual(int(self.raw.get("total")), sum(ledger))
        self.assertEqual(self.raw.keys("total{*"), [])  # no sub-key left behind
        s = [k.stats() for k in kits]
        self.assertGreater(sum(x["split_writes"] for x in s), 0)
        self.assertGreaterEqual(sum(x["folds"] for x in s), 2 * 3)
        self.assertEqual(sum(x["fold_errors"] for x in s), 0)

    def test_a_change_between_split_modes_with_the_same_parts_folds_nothing(self):
        # Readers of a counter being folded can see its total dip (on a cluster, between a
        # sub-key's GETDEL and the INCRBY of the key): a change that keeps the parts must not
        # fold.
        self.feed.put(entry("c", "split", split=4))
        kit = self.kit()
        self.wait_mode(kit, "c", "split")
        for _ in range(20):
            kit.incr("c")
        self.feed.put(entry("c", "split_cache", split=4, refresh=0.05))
        self.wait_mode(kit, "c", "split_cache")
        for _ in range(20):
            kit.incr("c")
        time.sleep(0.3)  # several sweeps
        self.assertEqual(kit.stats()["folds"], 0)
        self.assertNotEqual(self.raw.keys("c{*"), [])  # the parts are still in use
        self.assertEqual(kit.get("c"), b"40")
        self.feed.put(entry("c", "split", split=2))  # other parts: the old ones fold
        wait_until(lambda: kit.stats()["folds"] == 1, WAIT, "the fold")
        self.assertEqual(kit.get("c"), b"40")

    def test_fold_moves_floats_and_is_idempotent(self):
        self.feed.put(entry("f", "split", split=2))
        kit = self.kit()
        self.wait_mode(kit, "f", "split")
        kit.incrbyfloat("f", 0.5)
        kit.incrbyfloat("f", 0.25)
        kit.incrbyfloat("f", 2)
        self.assertEqual(kit.get("f"), b"2.75")
        self.feed.remove("f")
        wait_until(lambda: kit.stats()["folds"] == 1, WAIT, "the fold")
        self.assertEqual(self.raw.get("f"), b"2.75")
        e = type("E", (), {"key": b"f", "sub_keys": sub_key_names(b"f", 2)})
        kit._fold(e)  # again: nothing left to move
        self.assertEqual(self.raw.get("f"), b"2.75")


    def test_a_failed_fold_is_retried_and_del_removes_the_sub_keys(self):
        self.feed.put(entry("n", "split", split=2))
        self.feed.put(entry("gone", "split", split=4))
        kit = self.kit()
        self.wait_mode(kit, "gone", "split")
        for _ in range(20):
            kit.incr("n")
            kit.incr("gone")
        in_sub = int(self.raw.get(sub_key_names(b"n", 2)[0]))
        self.raw.set("n", "not a number")  # the fold cannot add to this key
        self.feed.remove("n")
        wait_until(lambda: kit.stats()["fold_errors"] >= 1, WAIT, "a failed fold")
        self.assertEqual(kit.stats()["folds"], 0)
        self.raw.set("n", "5")
        wait_until(lambda: kit.stats()["folds"] == 1, WAIT, "the retried fold")
        self.assertEqual(self.raw.get("n"), b"%d" % (5 + in_sub))
        self.assertEqual(kit.delete("gone", "nothing"), 1)
        self.assertEqual(self.raw.keys("gone*"), [])
        self.assertIsNone(kit.get("gone"))


class FeedTest(KitTest):
    def test_reconnects_after_the_feed_restarts(self):
        self.feed.put(entry("a", "cache"))
        kit = self.kit()
        self.wait_mode(kit, "a", "cache")
        self.feed.stop()
        wait_until(lambda: kit.stats()["feed_reconnects"] >= 1, WAIT, "a reconnect attempt")
        self.feed.put(entry("b", "cache"))  # while down: in the next snapshot
        self.feed.start()
        self.wait_mode(kit, "b", "cache")
        self.feed.put(entry("c", "split"))
        self.wait_mode(kit, "c", "split")
        self.assertGreaterEqual(self.feed.streams_served, 2)

    def test_a_version_gap_refetches_the_set(self):
        kit = self.kit()
        self.feed.put(entry("one", "cache"))
        self.wait_mode(kit, "one", "cache")
        self.feed.put_silently(entry("two", "cache"))
        self.feed.put(entry("three", "cache"))
        self.wait_mode(kit, "three", "cache")
        self.wait_mode(kit, "two", "cache")
        self.assertEqual(kit.stats()["feed_resyncs"], 1)

    def test_entries_without_raw_keys_or_malformed_are_ignored(self):
        self.feed.put(entry("secret", "cache", with_key=False))
        self.feed.put(dict(entry("odd", "cache"), mode="teleport"))
        self.feed.put(dict(entry("s", "split"), split_factor=1))
        self.feed.put(dict(entry("p", "split"), match="prefix"))
        self.feed.put(dict(entry("b", "cache"), key_b64="!!"))
        self.feed.put(entry(b"\x00\xffbin", "cache"))
        kit = self.kit()
        self.wait_mode(kit, b"\x00\xffbin", "cache")
        self.assertEqual(len(kit.entries()), 1)
        self.assertEqual(kit.stats()["ignored_entries"], 5)
        self.raw.set(b"\x00\xffbin", "v")
        self.assertEqual(kit.get(b"\x00\xffbin"), b"v")
        self.assertEqual(kit.get(b"\x00\xffbin"), b"v")
        self.assertEqual(kit.stats()["cache_hits"], 1)


    def test_raw_keys_come_with_basic_auth(self):
        self.feed.stop()
        self.feed = FeedServer(auth=("app", "pw"))
        self.feed.put(entry("k1", "cache"))
        blind = self.kit()
        kit = self.kit(auth=("app", "pw"))
        self.wait_mode(kit, "k1", "cache")
        self.feed.put(entry("k2", "cache"))
        self.wait_mode(kit, "k2", "cache")
        wait_until(lambda: blind.stats()["ignored_entries"] == 2, WAIT, "k2 ignored")
        self.assertEqual(blind.entries(), [])


class SeveralFeedsTest(KitTest):
    def test_the_kit_acts_on_the_union_of_several_feeds(self):
        other = FeedServer(lease=1.0, heartbeat=0.2)
        self.addCleanup(other.stop)
        iso = RedisServer()
        self.addCleanup(iso.stop)
        self.feed.put(entry("a", "cache", refresh=60))
        self.feed.put(entry("both", "cache", refresh=60))
        other.put(entry("b", "split", split=2))
        other.put(entry("both", "isolate"))     # the first feed listed names it too
        kit = self.kit(feed_url=[self.feed.url, other.url], isolate_client=iso.client())
        self.wait_mode(kit, "a", "cache")
        self.wait_mode(kit, "b", "split")
        self.assertEqual(sorted((e.key, e.mode) for e in kit.entries()),
                         [(b"a", "cache"), (b"b", "split"), (b"both", "cache")])
        state = kit._feed.state
        self.raw.set("a", "x")
        self.assertEqual(kit.get("a"), b"x")
        self.raw.set("a", "y")
        self.assertEqual(kit.get("a"), b"x")    # the copy
        for _ in range(10):
            kit.incr("b")
        self.assertEqual(kit.get("b"), b"10")
        kit.set("both", "here")
        self.assertEqual(self.raw.get("both"), b"here")  # cache mode, not isolate
        self.assertEqual(kit.get("both"), b"here")       # now a copy
        self.assertIs(kit._feed.state, state)   # no table built per call
        other.put(entry("c", "cache", refresh=60))       # an add: its feed's lease
        self.wait_mode(kit, "c", "cache")
        # Each entry keeps its own feed's lease: with the second feed partitioned away, its
        # entries (b, c and its own "both") expire after its 1 s lease (b is folded back)
        # while the first feed's stay, copies included.
        other.reachable.clear()
        wait_until(lambda: kit.stats()["fallbacks"] == 3, WAIT, "the second feed's leases")
        wait_until(lambda: kit.stats()["folds"] == 1, WAIT, "b's fold")
        other.reachable.set()
        self.assertEqual(self.raw.get("b"), b"10")
        self.assertEqual({e.key for e in kit.entries()} & {b"a", b"both"}, {b"a", b"both"})
        fetches = kit.stats()["origin_fetches"]
        self.raw.set("both", "changed")
        self.assertEqual(kit.get("a"), b"x")    # still the first feed's cache entry
        self.assertEqual(kit.get("both"), b"here")  # its copy outlived the other's entry
        self.assertEqual(kit.stats()["origin_fetches"], fetches)
        s = kit.stats()
        self.assertGreaterEqual(s["feed_events"], 2 * 2)  # a snapshot and a heartbeat each
        kit.close()
        self.assertFalse(any(f._thread.is_alive() for f in kit._feed.followers))

    def test_wait_synced_waits_for_every_feed(self):
        other = FeedServer()
        self.addCleanup(other.stop)
        other.reachable.clear()
        kit = HotkeyClient(self.redis.client(), (self.feed.url, other.url))
        self.kits.append(kit)
        self.assertTrue(kit._feed.followers[0].connected.wait(WAIT))
        self.assertFalse(kit.wait_synced(0.2))
        other.reachable.set()
        self.assertTrue(kit.wait_synced(WAIT))


class IsolateTest(KitTest):
    def test_isolated_keys_and_prefixes_go_to_the_isolate_client(self):
        other = RedisServer()
        self.addCleanup(other.stop)
        self.feed.put(entry("tenant:acme", "isolate"))
        self.feed.put(entry("flash:", "isolate", match="prefix"))
        kit = self.kit(isolate_client=other.client())
        self.wait_mode(kit, "flash:", "isolate")
        kit.set("tenant:acme", "1")
        kit.incr("flash:sale")
        kit.hset("flash:h", "f", "v")
        kit.set("plain", "p")
        iso = other.client()
        self.assertEqual(iso.get("tenant:acme"), b"1")
        self.assertEqual(iso.get("flash:sale"), b"1")
        self.assertEqual(iso.hgetall("flash:h"), {b"f": b"v"})
        self.assertEqual(self.raw.keys("*"), [b"plain"])
        self.assertEqual(kit.get("tenant:acme"), b"1")
        self.assertEqual(kit.mget("flash:sale", "plain"), [b"1", b"p"])
        self.assertIsNone(iso.get("plain"))
        self.assertEqual(kit.delete("tenant:acme", "plain"), 2)
        self.assertEqual(iso.keys("tenant*") + self.raw.keys("*"), [])


class ClusterTest(unittest.TestCase):
    """A RedisCluster client: the parts of an untagged key land on distinct nodes (then
    distinct slots), GET sums them across nodes, and both fold paths (one script for a
    tagged key, a move per sub-key for an untagged one) keep the totals."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = RedisCluster()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def setUp(self):
        for s in self.cluster.servers:
            s.client().flushall()
        self.raw = self.cluster.client()
        self.feed = FeedServer()
        self.addCleanup(self.feed.stop)

    def kit(self, **kw):
        kit = HotkeyClient(self.cluster.client(), self.feed.url, **kw)
        self.addCleanup(kit.close)
        self.assertTrue(kit.wait_synced(WAIT))
        return kit

    def node(self, key):
        return self.raw.get_node_from_key(key).name

    def test_split_parts_land_on_distinct_nodes_and_totals_stay_exact(self):
        self.feed.put(entry("hits", "split", split=3))
        kits = [self.kit(rng=random.Random(1)), self.kit(rng=random.Random(2))]
        for kit in kits:
            wait_until(lambda: len(kit.entries()) == 1, WAIT, "the entry")
        parts = kits[0].entries()[0].parts
        self.assertEqual(parts[0], b"hits")
        self.assertEqual(kits[1].entries()[0].parts, parts)  # same map, same names
        self.assertEqual(len({self.node(p) for p in parts}), 3)
        ledger = [0] * 4

        def writer(i):
            kit, rng = kits[i % 2], random.Random(i)
            for _ in range(150):
                n = rng.randint(-3, 10)
                kit.incrby("hits", n)
                ledger[i] += n

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertTrue(all(self.raw.exists(p) for p in parts))  # every node took writes
        self.assertEqual(kits[0].get("hits"), b"%d" % sum(ledger))
        self.feed.remove("hits")
        wait_until(lambda: all(k.stats()["folds"] == 1 for k in kits), WAIT, "the folds")
        self.assertEqual(self.raw.get("hits"), b"%d" % sum(ledger))
        self.assertEqual(self.raw.keys("hits{*"), [])

    def test_split_counters_on_a_cluster(self):
        self.feed.put(entry("views", "split", split=8))
        self.feed.put(entry("{user:1}:views", "split", split=8))
        kit = self.kit()
        wait_until(lambda: len(kit.entries()) == 2, WAIT, "both entries")
        for key in ("views", "{user:1}:views"):
            for _ in range(100):
                kit.incrby(key, 3)
            self.assertEqual(kit.get(key), b"300")
        by_key = {e.key: e.parts for e in kit.entries()}
        untagged = by_key[b"views"]
        self.assertEqual(len({self.node(p) for p in untagged[:3]}), 3)  # every node first
        self.assertEqual(len({key_slot(p) for p in untagged}), 8)       # then distinct slots
        self.assertEqual({key_slot(p) for p in by_key[b"{user:1}:views"]},
                         {key_slot(b"{user:1}:views")})
        self.feed.remove("views")
        self.feed.remove("{user:1}:views")
        wait_until(lambda: kit.stats()["folds"] == 2, WAIT, "the folds")
        self.assertEqual(kit.stats()["fold_errors"], 0)
        for key in ("views", "{user:1}:views"):
            self.assertEqual(self.raw.get(key), b"300")
        self.assertEqual(self.raw.keys("*{hk:*"), [])


class PassThroughTest(unittest.TestCase):
    def test_unfed_commands_and_keys_go_straight_to_redis(self):
        server = RedisServer()
        self.addCleanup(server.stop)
        kit = HotkeyClient(server.client(), None)
        self.assertTrue(kit.set("k", "v"))
        self.assertEqual(kit.get("k"), b"v")
        self.assertEqual(kit.dbsize(), 1)  # not covered: delegated
        self.assertEqual(kit.stats()["cache_hits"], 0)


class UnitTest(unittest.TestCase):
    def test_sse_parser_follows_the_event_stream_format(self):
        p = SseParser()
        out = [p.line(x) for x in [": comment\n", "id: 3\r\n", "event: add\n", "data: {\n",
                                   "data:}\n", "\n", "\n"]]
        self.assertEqual([o for o in out if o], [("add", "{\n}", "3")])

    def test_split_sums_print_like_redis(self):
        self.assertEqual(_sum_values([b"10", b"5", None]), b"15")
        self.assertEqual(_sum_values([None, b"0.1", b"0.2"]), b"0.3")
        self.assertEqual(_sum_values(["1", "-1"]), "0")
        self.assertEqual(_sum_values([b"text", None]), b"text")
        self.assertIsNone(_sum_values([None, None]))
        big = 2 ** 63 - 1
        self.assertEqual(_sum_values([str(big).encode(), b"1"]), str(big + 1).encode())

    def test_sub_keys_keep_hash_tags_and_spread_untagged_keys(self):
        untagged = sub_key_names(b"views", 16)
        self.assertEqual(len(untagged), 15)  # parts 1..15; part 0 is the key
        self.assertEqual(len({key_slot(n) for n in (b"views",) + untagged}), 16)
        self.assertTrue(all(n.startswith(b"views{hk:") for n in untagged))
        tagged = sub_key_names(b"{user:1}:views", 8)
        self.assertEqual({key_slot(n) for n in tagged}, {key_slot(b"{user:1}:views")})
        self.assertEqual(len(set(tagged)), 7)
        self.assertEqual(sub_key_names(b"views", 16), untagged)  # same in every process
        self.assertNotEqual({key_slot(n) for n in sub_key_names(b"likes", 16)},
                            {key_slot(n) for n in untagged})
        self.assertRaises(ValueError, sub_key_names, b"views", 1)

    def test_sub_keys_take_distinct_nodes_while_nodes_remain(self):
        # Four nodes of unequal size: "d" serves only 16 slots; slot 100 is uncovered.
        slot_nodes = {s: "abc"[s % 3] for s in range(16384)}
        for s in range(5000, 5016):
            slot_nodes[s] = "d"
        del slot_nodes[100]
        for key in (b"views", b"likes", b"x"):
            parts = (key,) + sub_key_names(key, 8, slot_nodes)
            slots = [key_slot(p) for p in parts]
            nodes = [slot_nodes.get(s) for s in slots]
            self.assertEqual(len(set(nodes[:4])), 4, (key, nodes))  # every node first
            self.assertEqual(len(set(slots)), 8)                    # then distinct slots
            self.assertEqual(sub_key_names(key, 8, slot_nodes), parts[1:])
        # A tagged key keeps its slot whatever the map says.
        self.assertEqual(sub_key_names(b"{u}:v", 3, slot_nodes), sub_key_names(b"{u}:v", 3))


if __name__ == "__main__":
    unittest.main()
