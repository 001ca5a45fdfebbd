"""The kit as a library: pipelines and transactions, redis.asyncio, health, topology
following, server-assisted invalidation (tracking), and the typed API. Real redis-servers
(skipped with the reason when there is none) and the feed fixture (fixtures.FeedServer).
"""

import asyncio
import os
import subprocess
import tempfile
import textwrap
import unittest

import redis
import redis.asyncio

from fixtures import FeedServer, RedisCluster, RedisServer, entry, need_redis_server, wait_until

import hotkeyd_client
from hotkeyd_client import AsyncHotkeyClient, ClusterFeeds, HotkeyClient, SplitKeyError

WAIT = 20


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_redis_server()
        cls.redis = RedisServer()

    @classmethod
    def tearDownClass(cls):
        cls.redis.stop()

    def setUp(self):
        self.raw = self.redis.client()
        self.raw.flushall()
        self.feed = FeedServer(lease=10.0, heartbeat=0.2)
        self.addCleanup(self.feed.stop)

    def kit(self, **kw):
        k = HotkeyClient(self.redis.client(), self.feed.url, **kw)
        self.addCleanup(k.close)
        self.assertTrue(k.wait_synced(WAIT))
        return k

    def wait_mode(self, kit, key, mode):
        k = key.encode() if isinstance(key, str) else key
        wait_until(lambda: any(e.key == k and e.mode == mode for e in kit.entries()), WAIT,
                   f"{key!r} in {mode} mode")


class PipelineTest(Base):
    def test_a_pipeline_sums_split_gets_and_spreads_counter_writes(self):
        self.feed.put(entry("ctr", "split", split=4))
        kit = self.kit()
        self.wait_mode(kit, "ctr", "split")
        for transaction in (False, True):
            with kit.pipeline(transaction=transaction) as p:
                for _ in range(20):
                    p.incr("ctr")
                p.incrby("ctr", 5).get("ctr").set("other", "x").get("other")
                replies = p.execute()
            self.assertEqual(len(replies), 24)
            self.assertEqual(replies[-3:], [b"%d" % (25 * (1 + transaction)), True, b"x"])
        # The writes went to several parts (the key alone would hold them all).
        (info,) = kit.entries()
        spread = [self.raw.get(p) for p in info.parts]
        self.assertGreater(sum(1 for v in spread if v), 1)
        self.assertEqual(sum(int(v or 0) for v in spread), 50)
        self.assertEqual(kit.stats()["split_writes"], 42)
        # DEL takes the sub-keys and counts the name once.
        p = kit.pipeline()
        p.delete("ctr", "other")
        self.assertEqual(p.execute(), [2])
        self.assertFalse(any(self.raw.exists(n) for n in info.parts))

    def test_other_commands_on_a_split_key_are_refused_not_sent_to_part_zero(self):
        self.feed.put(entry("ctr", "split", split=4))
        kit = self.kit()
        self.wait_mode(kit, "ctr", "split")
        p = kit.pipeline()
        with self.assertRaises(SplitKeyError):
            p.set("ctr", 5)
        with self.assertRaises(SplitKeyError):
            p.expire("ctr", 10)
        self.assertEqual(p.execute(), [])
        with self.assertRaises(SplitKeyError):
            kit.transaction(lambda pipe: pipe.incr("ctr"), "ctr")
        # A transaction watching another key works, and applies the fix inside it.
        self.raw.set("w", 1)
        out = kit.transaction(lambda pipe: (pipe.multi(), pipe.incr("ctr"), pipe.get("ctr")),
                              "w")
        self.assertEqual(out[-1], b"1")

    def test_a_pipeline_drops_the_copies_of_the_keys_it_touched(self):
        self.feed.put(entry("page", "cache", refresh=60))
        kit = self.kit()
        self.wait_mode(kit, "page", "cache")
        self.raw.set("page", "a")
        self.assertEqual(kit.get("page"), b"a")
        kit.pipeline().set("page", "b").execute()
        self.assertEqual(kit.get("page"), b"b")


class AsyncTest(Base):
    def test_the_async_client_applies_cache_and_split_and_folds_back(self):
        self.feed.put(entry("page", "cache", refresh=60))
        self.feed.put(entry("ctr", "split", split=4))

        async def run():
            kit = AsyncHotkeyClient(redis.asyncio.Redis(port=self.redis.port), self.feed.url)
            try:
                await asyncio.get_running_loop().run_in_executor(None, kit.wait_synced, WAIT)
                await self.raw_set("page", "a")
                gets = self.redis.calls("get")
                values = await asyncio.gather(*[kit.get("page") for _ in range(16)])
                self.assertEqual(values, [b"a"] * 16)
                self.assertEqual(self.redis.calls("get") - gets, 1)  # single-flight
                self.assertEqual(kit.stats()["origin_fetches"], 1)
                await kit.set("page", "b")          # a write drops the copy
                self.assertEqual(await kit.get("page"), b"b")
                for _ in range(30):
                    await kit.incr("ctr")
                self.assertEqual(await kit.get("ctr"), b"30")
                self.assertEqual(await kit.mget(["ctr", "page", "none"]), [b"30", b"b", None])
                p = kit.pipeline()
                p.incr("ctr")
                p.get("ctr")
                self.assertEqual((await p.execute())[-1], b"31")
                self.feed.remove("ctr")
                for _ in range(200):
                    if kit.stats()["folds"]:
                        break
                    await asyncio.sleep(0.05)
                self.assertEqual(kit.stats()["folds"], 1)
                self.assertEqual(self.raw.get("ctr"), b"31")  # all in the key itself
            finally:
                await kit.aclose()
                await kit.redis.close()
                await kit.redis.connection_pool.disconnect()

        asyncio.run(run())

    async def raw_set(self, k, v):
        self.raw.set(k, v)


class HealthTest(Base):
    def test_health_shows_connection_version_and_the_last_error(self):
        self.feed.put(entry("a", "cache"))
        kit = self.kit()
        (h,) = kit.health()
        self.assertTrue(h.connected)
        self.assertEqual(h.version, self.feed.version)
        self.assertIsNone(h.last_error)
        self.assertFalse(h.misconfigured)
        self.feed.stop()
        wait_until(lambda: not kit.health()[0].connected, WAIT, "the disconnect")
        wait_until(lambda: kit.health()[0].last_error, WAIT, "the error")
        self.assertFalse(kit.health()[0].misconfigured)
        self.feed.start()
        wait_until(lambda: kit.health()[0].connected, WAIT, "the reconnect")
        self.assertIsNone(kit.health()[0].last_error)

    def test_a_tls_failure_is_a_configuration_error(self):
        # An https URL to the plain-HTTP fixture: the handshake fails.
        kit = HotkeyClient(self.redis.client(), self.feed.url.replace("http:", "https:"))
        self.addCleanup(kit.close)
        with self.assertRaises(hotkeyd_client.FeedConfigError) as caught:
            kit.wait_synced(WAIT)
        self.assertIn("TLS", str(caught.exception))
        self.assertTrue(kit.health()[0].misconfigured)


class FakeTopology:
    """A stand-in redis client for ClusterFeeds: CLUSTER NODES as the test sets it."""

    def __init__(self, nodes):
        self.nodes = nodes

    def cluster_nodes(self):
        return dict(self.nodes)


class TopologyTest(Base):
    def test_feeds_follow_the_nodes_replicas_included_and_a_failover(self):
        # Two "nodes": a primary and its replica, each with its hotkeyd (a fixture here).
        replica_feed = FeedServer(lease=10.0, heartbeat=0.2)
        self.addCleanup(replica_feed.stop)
        web = {7001: self.feed.url, 7002: replica_feed.url}
        topo = FakeTopology({"127.0.0.1:7001": {"flags": "myself,master"},
                             "127.0.0.1:7002": {"flags": "slave"}})
        feeds = ClusterFeeds(lambda host, port: web[port], interval=0.1)
        self.assertEqual(feeds.urls(topo), [self.feed.url, replica_feed.url])
        self.assertEqual(ClusterFeeds(lambda h, p: web[p], replicas=False).urls(topo),
                         [self.feed.url])
        self.assertEqual(ClusterFeeds("http://{host}:{web_port}", web_port_offset=1000)
                         .urls(topo), ["http://127.0.0.1:8001", "http://127.0.0.1:8002"])
        self.assertEqual(ClusterFeeds("http://{host}:{port}", client=topo).urls(None),
                         ["http://127.0.0.1:7001", "http://127.0.0.1:7002"])
        # The kit's origin is a real Redis; its topology comes from the stand-in.
        origin = self.redis.client()
        origin.cluster_nodes = topo.cluster_nodes
        kit = HotkeyClient(origin, feeds)
        self.addCleanup(kit.close)
        self.feed.put(entry("a", "cache"))
        replica_feed.put(entry("b", "split", split=2))
        self.assertTrue(kit.wait_synced(WAIT))
        self.wait_mode(kit, "b", "split")
        # Failover: the replica is promoted, the old primary fails and leaves.
        topo.nodes = {"127.0.0.1:7002": {"flags": "master"},
                      "127.0.0.1:7001": {"flags": "master,fail"}}
        wait_until(lambda: [h.url for h in kit.health()] == [replica_feed.url], WAIT,
                   "the old primary's feed dropped")
        self.assertEqual(sorted(e.key for e in kit.entries()), [b"b"])
        s = kit.stats()
        self.assertEqual((s["feeds_removed"], s["feeds_added"]), (1, 0))
        # A node added later is followed.
        topo.nodes["127.0.0.1:7001"] = {"flags": "slave"}
        wait_until(lambda: kit.stats()["feeds_added"] == 1, WAIT, "the new node's feed")
        self.wait_mode(kit, "a", "cache")

    def test_cluster_feeds_read_a_real_cluster(self):
        cluster = RedisCluster()
        self.addCleanup(cluster.stop)
        urls = ClusterFeeds("http://{host}:{port}").urls(cluster.client())
        self.assertEqual(sorted(urls), sorted(f"http://127.0.0.1:{s.port}"
                                              for s in cluster.servers))
        # A cluster client's pipeline (no transactions there) applies the split fix too.
        self.feed.put(entry("ctr", "split", split=3))
        kit = HotkeyClient(cluster.client(), self.feed.url)
        self.addCleanup(kit.close)
        self.wait_mode(kit, "ctr", "split")
        p = kit.pipeline()
        for _ in range(30):
            p.incr("ctr")
        p.get("ctr")
        self.assertEqual(p.execute()[-1], b"30")
        (info,) = kit.entries()
        self.assertGreater(sum(1 for n in info.parts if cluster.client().get(n)), 1)


class FailoverTest(Base):
    def test_a_real_failover_moves_the_primary_feed_first_and_a_removed_node_is_dropped(self):
        # One shard: a primary and its replica, a Redis Cluster of two nodes, each with its
        # hotkeyd (a feed fixture here). The replica is promoted (CLUSTER FAILOVER), then the
        # old primary stops and is removed from the cluster (CLUSTER FORGET).
        conf = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "1000")
        a = RedisServer(*conf, port=RedisCluster._port())
        self.addCleanup(a.stop)
        b = RedisServer(*conf, port=RedisCluster._port())
        self.addCleanup(b.stop)
        a.client().execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        b.client().execute_command("CLUSTER", "MEET", "127.0.0.1", a.port)
        a_id = a.client().execute_command("CLUSTER", "MYID").decode()
        wait_until(lambda: a_id in str(b.client().execute_command("CLUSTER", "NODES")), WAIT,
                   "the nodes to meet")
        b.client().execute_command("CLUSTER", "REPLICATE", a_id)
        wait_until(lambda: b.client().info("replication")["master_link_status"] == "up",
                   WAIT, "the replica in sync")
        feed_b = FeedServer(lease=10.0, heartbeat=0.2)
        self.addCleanup(feed_b.stop)
        web = {a.port: self.feed.url, b.port: feed_b.url}
        feeds = ClusterFeeds(lambda host, port: web[port], interval=0.2, client=b.client())
        kit = HotkeyClient(a.client(), feeds)
        self.addCleanup(kit.close)
        self.assertTrue(kit.wait_synced(WAIT))
        self.assertEqual([h.url for h in kit.health()], [self.feed.url, feed_b.url])
        b.client().execute_command("CLUSTER", "FAILOVER")
        wait_until(lambda: feeds.urls(None)[0] == feed_b.url, WAIT, "the promotion")
        # The promoted replica's feed is listed first: its entries win where both name a key.
        self.feed.put(entry("k", "cache"))
        feed_b.put(entry("k", "split", split=2))
        wait_until(lambda: [h.url for h in kit.health()] == [feed_b.url, self.feed.url],
                   WAIT, "the feeds reordered")
        self.wait_mode(kit, "k", "split")
        # The old primary taken out of the cluster: its feed is dropped. (A node merely
        # suspected, flag fail?, keeps its feed: its entries still have their leases.)
        a.stop()
        b.client().execute_command("CLUSTER", "FORGET", a_id)
        wait_until(lambda: [h.url for h in kit.health()] == [feed_b.url], WAIT,
                   "the removed node's feed dropped")
        self.assertEqual(kit.stats()["feeds_removed"], 1)


class TrackingTest(Base):
    def test_the_server_invalidates_a_copy_on_write_and_tracks_only_feed_keys(self):
        self.feed.put(entry("page", "cache", refresh=600))
        kit = self.kit(tracking=True)
        self.wait_mode(kit, "page", "cache")
        wait_until(lambda: kit._tracker.ready(), WAIT, "tracking connections")
        self.raw.set("page", "a")
        self.raw.set("cold", "x")
        self.assertEqual(kit.get("page"), b"a")
        self.assertEqual(kit.get("page"), b"a")       # a copy
        self.assertEqual(kit.get("cold"), b"x")       # not in the feed: not tracked
        info = self.raw.info()
        self.assertEqual(info["tracking_total_keys"], 1)  # OPTIN: only the feed's key
        self.raw.set("page", "b")                     # another client writes
        wait_until(lambda: kit.stats()["invalidations"] == 1, WAIT, "the invalidation")
        self.assertEqual(kit.get("page"), b"b")       # long before the 600 s refresh
        self.assertEqual(kit.stats()["origin_fetches"], 2)
        # Hash reads are tracked reads too, replies parsed as redis-py parses them.
        self.feed.put(entry("h", "cache", refresh=600))
        self.wait_mode(kit, "h", "cache")
        self.raw.hset("h", mapping={"f": "1", "g": "2"})
        self.assertEqual(kit.hgetall("h"), {b"f": b"1", b"g": b"2"})
        self.assertEqual(kit.hmget("h", ["f", "g"]), [b"1", b"2"])
        self.assertEqual(kit.hget("h", "g"), b"2")
        self.raw.hset("h", "g", "3")
        wait_until(lambda: kit.hget("h", "g") == b"3", WAIT, "the hash's copies invalidated")
        self.assertEqual(kit.hgetall("h"), {b"f": b"1", b"g": b"3"})

    def test_a_lost_tracking_connection_drops_every_copy(self):
        self.feed.put(entry("page", "cache", refresh=600))
        kit = self.kit(tracking=True)
        self.wait_mode(kit, "page", "cache")
        wait_until(lambda: kit._tracker.ready(), WAIT, "tracking connections")
        self.raw.set("page", "a")
        self.assertEqual(kit.get("page"), b"a")
        self.raw.client_kill_filter(_type="pubsub")   # the invalidation connection
        self.raw.set("page", "b")
        wait_until(lambda: kit.get("page") == b"b", WAIT, "the copy dropped")


class TypedApiTest(unittest.TestCase):
    def test_a_type_checker_sees_the_public_api(self):
        venv = os.environ.get("HOTKEYD_KIT_VENV")
        if not venv:
            self.skipTest("run by tests/clients/python_kit.sh (mypy against the installed kit)")
        good = textwrap.dedent("""
            from typing import List
            import redis
            from hotkeyd_client import (AsyncHotkeyClient, ClusterFeeds, EntryInfo,
                                        FeedHealth, HotkeyClient, __version__)
            kit = HotkeyClient(redis.Redis(), "http://127.0.0.1:1", start=False)
            health: List[FeedHealth] = kit.health()
            entries: List[EntryInfo] = kit.entries()
            ok: bool = kit.wait_synced(0.1)
            version: str = __version__
            kit.setex("k", 10, "v")
            kit.close()
            feeds: ClusterFeeds = ClusterFeeds("http://{host}:{port}")

            async def use(a: AsyncHotkeyClient) -> None:
                await a.aclose()
        """)
        bad = good + "wrong: int = kit.health()\nkit.wait_synced('soon')\n"
        with tempfile.TemporaryDirectory() as d:
            results = []
            for name, text in (("good.py", good), ("bad.py", bad)):
                path = os.path.join(d, name)
                with open(path, "w") as f:
                    f.write(text)
                results.append(subprocess.run(
                    [os.path.join(venv, "bin", "python"), "-m", "mypy", "--config-file",
                     os.environ["HOTKEYD_KIT_PYPROJECT"], "--cache-dir",
                     os.path.join(d, "cache"), path], capture_output=True, text=True, cwd=d))
        self.assertEqual(results[0].returncode, 0, results[0].stdout)
        self.assertNotEqual(results[1].returncode, 0)
        first_bad = good.count("\n") + 1
        self.assertIn(f"bad.py:{first_bad}:", results[1].stdout)
        self.assertIn(f"bad.py:{first_bad + 1}:", results[1].stdout)

    def test_the_version_comes_from_one_place(self):
        if not os.environ.get("HOTKEYD_KIT_VENV"):
            self.skipTest("run by tests/clients/python_kit.sh (the installed metadata)")
        from hotkeyd_client import _version
        self.assertEqual(hotkeyd_client.__version__, _version.__version__)
        from importlib.metadata import version
        self.assertEqual(version("hotkeyd_client"), hotkeyd_client.__version__)

    def test_entries_are_copies(self):
        kit = HotkeyClient(redis.Redis(), None)
        self.assertEqual(kit.entries(), [])
        info = hotkeyd_client.EntryInfo(b"k", "cache", 1.0, None, False, None, (), (), 10.0,
                                        10.0, "u")
        with self.assertRaises(Exception):
            info.mode = "split"  # frozen


if __name__ == "__main__":
    unittest.main()
