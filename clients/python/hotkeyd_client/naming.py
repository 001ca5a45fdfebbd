"""naming.py: the names of a split counter's sub-keys (see client.py's module comment).

Every process that splits a key must compute the same names, so they depend only on the key
and the split factor.
"""

import zlib

from redis.crc import key_slot


def has_hash_tag(key):
    """True when Redis Cluster hashes only part of `key` (a non-empty {...})."""
    s = key.find(b"{")
    if s < 0:
        return False
    e = key.find(b"}", s + 1)
    return e > s + 1


def sub_key_names(key, split_factor):
    """The S sub-key names of split key `key` (bytes); see the module comment."""
    seed = zlib.crc32(key)
    tagged = has_hash_tag(key)
    used, out = set(), []
    for i in range(split_factor):
        n = 0
        while True:
            tag = b"hk:%08x:%d" % (seed, i) + (b".%d" % n if n else b"")
            name = key + b"{" + tag + b"}"
            if tagged:
                break
            slot = key_slot(name)
            if slot not in used:
                used.add(slot)
                break
            n += 1
        out.append(name)
    return tuple(out)
