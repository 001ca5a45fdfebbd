"""naming.py: the names of a split counter's parts (see client.py's module comment).

A key K split S ways has S parts: K itself (part 0) and S-1 sub-keys, part i named
`K{hk:<crc32(K) as 8 hex digits>:<i>[.<n>]}`. Without a slot map the names depend only on K
and S, so every process computes the same ones; with one (a Redis Cluster client) they also
depend on the cluster's slot -> node map when the names were computed.
"""

import zlib
from typing import List, Mapping, Optional, Set, Tuple

from redis.crc import key_slot


def has_hash_tag(key: bytes) -> bool:
    """True when Redis Cluster hashes only part of `key` (a non-empty {...})."""
    s = key.find(b"{")
    if s < 0:
        return False
    e = key.find(b"}", s + 1)
    return e > s + 1


def sub_key_names(key: bytes, split_factor: int,
                  slot_nodes: Optional[Mapping[int, Optional[str]]] = None) -> Tuple[bytes, ...]:
    """The S-1 sub-key names (parts 1..S-1) of split key `key` (bytes).

    A key with a hash tag keeps its slot: every part is in it. For an untagged key, n (the
    `.<n>` counter) is the smallest that puts part i in a slot no earlier part (K included)
    is in. With `slot_nodes` (a mapping slot -> node id, None or absent for a slot no node
    serves), part i must also be on a node no earlier part is on, while such nodes remain;
    once every node has a part, distinct slots are enough.
    """
    if not 2 <= split_factor <= 1024:
        raise ValueError(f"split_factor {split_factor!r} is not in 2..1024")
    seed = zlib.crc32(key)
    if has_hash_tag(key):
        return tuple(key + b"{hk:%08x:%d}" % (seed, i) for i in range(1, split_factor))
    slot = key_slot(key)
    used_slots = {slot}
    nodes: Mapping[int, Optional[str]] = slot_nodes or {}
    free_nodes: Set[Optional[str]] = {n for n in nodes.values() if n is not None}
    free_nodes.discard(nodes.get(slot))
    out: List[bytes] = []
    for i in range(1, split_factor):
        n = 0
        while True:
            tag = b"hk:%08x:%d" % (seed, i) + (b".%d" % n if n else b"")
            name = key + b"{" + tag + b"}"
            slot = key_slot(name)
            # Terminates: a free node's slots hold no part yet, and S <= 1024 parts leave
            # unused slots among 16384.
            if slot not in used_slots and (not free_nodes
                                           or nodes.get(slot) in free_nodes):
                break
            n += 1
        used_slots.add(slot)
        if free_nodes:
            free_nodes.discard(nodes.get(slot))
        out.append(name)
    return tuple(out)
