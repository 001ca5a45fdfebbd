"""tracking.py: server-assisted invalidation of the kit's cached copies (Redis CLIENT TRACKING).

Without it, a cached copy lives out refresh_seconds, whatever is written meanwhile. With
HotkeyClient(tracking=True) Redis tells the kit when a key it cached is written, and the copy
is dropped at once; refresh_seconds stays the bound (for a lost invalidation, and for a copy
made while tracking is down).

How (https://redis.io/docs/latest/develop/reference/client-side-caching/): the kit's cached
reads are fetched on one connection of its own with `CLIENT TRACKING ON REDIRECT <id>
OPTIN`, each preceded by `CLIENT CACHING YES`, so Redis tracks only the keys the feed names
(OPTIN), not every key the application reads. Invalidations go to a second connection,
subscribed to `__redis__:invalidate` (the RESP2 redirect form). RESP3, where one
connection gets both, needs redis-py >= 5; Debian 12's redis-py 4.3.4 speaks RESP2 only,
and the redirect form is what Redis offers RESP2 clients for the same tracking.

Races: an invalidation can arrive (on its own connection) before the reply of a fetch that
read the old value. Each key has an invalidation count; a fetch remembers it when sent and
its value is not kept if the count moved (HotkeyClient._cached). If either connection
fails, every copy is dropped (invalidations may have been lost), reads go through the
wrapped client until both are back, and the tracker reconnects with backoff.

Cost on the server: one tracking-table entry per (key, client) fetched since its last
invalidation (INFO `tracking_total_keys`, `tracking_total_items`), one push message per
invalidated key, and two connections per HotkeyClient. The README has the measurement.

Thread safety: read() and read_many() serialise on one lock (fetches are rare: at most one
per key and refresh interval); epoch() is lock-free reads of ints.
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import redis

log = logging.getLogger("hotkeyd_client")

# Past this many keys with an invalidation count, the counts are cleared and the shared
# epoch moves instead (every fetch in flight then discards its value once), so the table
# stays bounded by this however many keys are ever invalidated.
MAX_COUNTED_KEYS = 4096
CHANNEL = b"__redis__:invalidate"


class Tracker:
    """See the module comment. `on_invalidate(keys)` gets the keys Redis invalidated (None:
    all, after FLUSHALL or a lost connection is announced separately by `on_lost()`)."""

    BACKOFF_INITIAL = 0.5
    BACKOFF_MAX = 30.0

    def __init__(self, redis_client: Any, on_invalidate: Callable[[Optional[Iterable[bytes]]],
                                                                  None],
                 on_lost: Callable[[], None]):
        if isinstance(redis_client, redis.RedisCluster) or not hasattr(redis_client,
                                                                      "connection_pool"):
            raise ValueError("tracking=True needs a redis.Redis client (one server)")
        self._r = redis_client
        self._kwargs = dict(redis_client.connection_pool.connection_kwargs)
        self._cls = redis_client.connection_pool.connection_class
        self._on_invalidate = on_invalidate
        self._on_lost = on_lost
        self._lock = threading.Lock()       # the data connection
        self._data: Optional[redis.Connection] = None
        self._inval: Optional[redis.Connection] = None
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._epoch = 0
        self._counts: Dict[bytes, int] = {}
        self._thread = threading.Thread(target=self._run, name="hotkeyd-tracking", daemon=True)
        self.invalidations = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._close()

    def ready(self) -> bool:
        return self._ready.is_set()

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def epoch(self, key: bytes) -> Tuple[int, int]:
        return self._epoch, self._counts.get(key, 0)

    # ------------------------------------------------------------------ reads

    def read(self, method: str, key: Any, *args: Any) -> Any:
        """One tracked read, e.g. read("get", k), with redis-py's reply parsing."""
        return self._send([(method, key, args)])[0]

    def read_many(self, method: str, keys: Iterable[Any]) -> List[Any]:
        return self._send([(method, k, ()) for k in keys])

    def _send(self, reads: List[Tuple[str, Any, Tuple[Any, ...]]]) -> List[Any]:
        cmds: List[Tuple[Any, ...]] = []
        names = []
        for method, key, args in reads:
            name = method.upper()
            # redis-py's HMGET takes its fields as a list; on the wire they are arguments.
            flat = [a for arg in args for a in (arg if isinstance(arg, (list, tuple))
                                                else (arg,))]
            cmds.append(("CLIENT", "CACHING", "YES"))
            cmds.append((name, key, *flat))
            names.append(name)
        with self._lock:
            conn = self._data
            if conn is None:
                raise redis.exceptions.ConnectionError("tracking connection is down")
            try:
                conn.send_packed_command(conn.pack_commands(cmds))
                out = []
                for name in names:
                    conn.read_response()  # CLIENT CACHING YES: OK
                    out.append(self._r.parse_response(conn, name))
                return out
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
                self._ready.clear()
                conn.disconnect()
                self._data = None
                self._on_lost()
                raise

    # ------------------------------------------------------------------ invalidations

    def _connect(self) -> None:
        inval = self._cls(**self._kwargs)
        inval.connect()
        inval.send_command("CLIENT", "ID")
        client_id = int(inval.read_response())
        inval.send_command("SUBSCRIBE", CHANNEL)
        inval.read_response()
        data = self._cls(**self._kwargs)
        data.connect()
        data.send_command("CLIENT", "TRACKING", "ON", "REDIRECT", client_id, "OPTIN")
        reply = data.read_response()
        if reply not in (b"OK", "OK"):
            raise redis.exceptions.ResponseError(f"CLIENT TRACKING: {reply!r}")
        with self._lock:
            self._inval, self._data = inval, data
        self._ready.set()

    def _close(self) -> None:
        self._ready.clear()
        with self._lock:
            for c in (self._data, self._inval):
                if c is not None:
                    c.disconnect()
            self._data = self._inval = None

    def _invalidated(self, keys: Optional[List[bytes]]) -> None:
        if keys is None:
            self._epoch += 1
        else:
            if len(self._counts) + len(keys) > MAX_COUNTED_KEYS:
                self._counts = {}
                self._epoch += 1
            for k in keys:
                self._counts[k] = self._counts.get(k, 0) + 1
            self.invalidations += len(keys)
        self._on_invalidate(keys)

    def _run(self) -> None:
        delay = self.BACKOFF_INITIAL
        rng = random.Random()
        while not self._stop.is_set():
            try:
                self._connect()
                delay = self.BACKOFF_INITIAL
                inval = self._inval
                assert inval is not None
                while not self._stop.is_set():
                    if not inval.can_read(timeout=0.2):
                        continue
                    msg = inval.read_response()
                    if (isinstance(msg, list) and len(msg) == 3 and msg[0] in (b"message",
                                                                           "message")):
                        keys = msg[2]
                        if keys is None:
                            self._invalidated(None)
                        else:
                            self._invalidated([k if isinstance(k, bytes) else str(k).encode()
                                               for k in keys])
            except Exception as err:  # noqa: BLE001 (the tracker must outlive any failure)
                if not self._stop.is_set():
                    log.info("hotkeyd_client: tracking connection: %s; copies dropped, "
                             "reconnecting", err)
            was_ready = self._ready.is_set()
            self._close()
            self._epoch += 1
            if was_ready:
                self._on_lost()
            if self._stop.wait(rng.uniform(delay / 2, delay)):
                break
            delay = min(delay * 2, self.BACKOFF_MAX)
