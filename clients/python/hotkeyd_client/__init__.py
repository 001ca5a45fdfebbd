"""hotkeyd_client: applies hotkeyd's advised hot-key fixes to a redis-py client at runtime.

    from hotkeyd_client import HotkeyClient
    r = HotkeyClient(redis.Redis(...), "http://127.0.0.1:10110")
    r.get("user:42")   # served locally while hotkeyd advises caching user:42

See README.md and docs/feed.md (the protocol).
"""

from ._version import __version__
from .aio import AsyncHotkeyClient
from .client import STAT_NAMES, HotkeyClient, SplitKeyError
from .feed import EntryInfo, FeedConfigError, FeedError, FeedHealth
from .naming import has_hash_tag, sub_key_names
from .topology import ClusterFeeds

__all__ = ["__version__", "HotkeyClient", "AsyncHotkeyClient", "ClusterFeeds", "EntryInfo",
           "FeedConfigError", "FeedError", "FeedHealth", "SplitKeyError", "STAT_NAMES",
           "has_hash_tag", "sub_key_names"]

