"""topology.py: following the hotkeyd beside every node of a Redis Cluster as nodes change.

With one hotkeyd per Redis Cluster node (docs/feed.md, "What a client does", 6), a kit
follows every node's feed and acts on the union. A fixed list of URLs goes stale: after a
failover the promoted replica's hotkeyd is the one that sees the shard's traffic, and a
node added later has a hotkeyd the list does not name. ClusterFeeds derives the list from
the cluster itself: every `interval` seconds the kit asks the cluster for its nodes
(CLUSTER NODES, through the wrapped client) and maps each node's address to its hotkeyd's
URL; feeds of new nodes are followed, feeds of nodes gone are dropped (their entries end as
on a remove: split counters fold back).

Replicas are followed too (`replicas=True`, the default): a replica's hotkeyd measures the
replica, and after a failover the promoted replica's feed is already synced, so its advice
takes over within one event, not one topology poll. Nodes flagged fail, noaddr or handshake
are skipped.

Cost: one CLUSTER NODES per `interval` (a few hundred bytes a node), on the kit's sweeper
thread, never on a call.
"""

from __future__ import annotations

from typing import Any, Callable, List, Sequence, Tuple, Union

from .client import ClusterFeedsLike

UrlFor = Union[str, Callable[[str, int], str]]

_SKIP_FLAGS = frozenset({"fail", "noaddr", "handshake"})


def split_address(addr: str) -> Tuple[str, int]:
    """("host", port) of a CLUSTER NODES address ("10.0.0.5:6379", "::1:6379")."""
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


class ClusterFeeds(ClusterFeedsLike):
    """A feed_url for HotkeyClient: one hotkeyd feed per node of the cluster.

    `url_for` maps a node's (host, port) to its hotkeyd's URL: a callable, or a template
    formatted with `host`, `port` (the Redis port) and `web_port` (port + web_port_offset),
    e.g. "http://{host}:{web_port}" with web_port_offset=4000 for hotkeyds listening 4000
    above their Redis. `replicas` (default True) follows replicas' feeds too. `interval`:
    seconds between topology reads. `client`: a redis-py client (not asyncio) to read the
    topology through; default the wrapped client (AsyncHotkeyClient needs one given here, as
    the topology is read on a thread).

    Thread safety: urls() is called from the kit's sweeper thread only."""

    def __init__(self, url_for: UrlFor, *, web_port_offset: int = 0, replicas: bool = True,
                 interval: float = 5.0, client: Any = None):
        if interval <= 0:
            raise ValueError("interval must be > 0")
        self.client = client
        self._url_for = url_for
        self._offset = web_port_offset
        self.replicas = replicas
        self.interval = interval

    def url(self, host: str, port: int) -> str:
        if callable(self._url_for):
            return self._url_for(host, port)
        return self._url_for.format(host=host, port=port, web_port=port + self._offset)

    def nodes(self, redis_client: Any) -> List[Tuple[str, int, bool]]:
        """(host, port, is_primary) of every node the cluster lists and the kit follows."""
        out = []
        # CLUSTER NODES through execute_command: redis.Redis has no cluster_nodes() in
        # redis-py 4.3, and both clients parse the reply (parse_cluster_nodes).
        c = self.client or redis_client
        reply = c.cluster_nodes() if hasattr(c, "cluster_nodes") else c.execute_command(
            "CLUSTER NODES")
        for addr, node in reply.items():
            flags = set(str(node.get("flags", "")).split(","))
            if flags & _SKIP_FLAGS or not addr or addr.startswith(":"):
                continue
            primary = "master" in flags
            if not primary and not self.replicas:
                continue
            host, port = split_address(addr)
            out.append((host, port, primary))
        return sorted(out, key=lambda n: (not n[2], n[0], n[1]))

    def urls(self, redis_client: Any) -> Sequence[str]:
        """Primaries first: where two feeds name a key, the first listed wins."""
        return [self.url(h, p) for h, p, _ in self.nodes(redis_client)]
