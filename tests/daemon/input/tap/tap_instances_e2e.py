#!/usr/bin/python3
"""tap_instances_e2e.py: two Redis instances on one host, one hotkeyd each.

One tap port is one shard: a share is of one server's traffic. Two real redis-servers (A
and B) run on free loopback ports, and two real hotkeyds each tap one of them on lo
(--tap.port=<A> and --tap.port=<B>), as a systemd template unit (hotkeyd@.service) or a
sidecar per pod would run them:
  split   one key is half of A's traffic, the rest of A and all of B spread over many keys:
          hotkeyd A reports that key at 0.5 (within its share_error, plus the keyless
          commands a client sends), hotkeyd B never reports it, and each counts the commands
          of its own server only (within 1% of its INFO commandstats)
Also: a hotkeyd given both ports (--tap.port=A,B) refuses to start, saying to run one per
instance.

Prints one JSON line of figures per case. Needs CAP_NET_RAW (root): fails without it.

Usage: tap_instances_e2e.py HOTKEYD [CASE ...]
"""

import json
import os
import random
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap_e2e_lib import (Hotkeyd, RedisServer, check, hotkeyd_has_tap,  # noqa: E402
                         require_capture, require_programs, run_cases, within)

HOTKEYD = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
TAP_FLAGS = ["--tap.buffer-bytes=64MiB"]
HOT = "hot:a"
COMMANDS = 20000  # per server
# Keyless commands the client sends besides the GETs (redis-py's connection set-up, the
# PINGs that poke the capture awake): a few, so the hot key's share may be that much
# under 0.5 on top of the tracker's own error bound.
SLACK = 0.01


def load(server, keys):
    """Sends one GET of each key in `keys` through a pipeline of 500 at a time."""
    c = server.client()
    for i in range(0, len(keys), 500):
        p = c.pipeline(transaction=False)
        for k in keys[i:i + 500]:
            p.get(k)
        p.execute()


def commands(server):
    return sum(server.commandstats().values())


def case_split(work):
    a, b = RedisServer(work, name="a"), RedisServer(work, name="b")
    da = Hotkeyd(HOTKEYD, work, a.port, "redis", *TAP_FLAGS)
    db = Hotkeyd(HOTKEYD, work, b.port, "redis", *TAP_FLAGS)
    da.wait_capturing(a.client().ping)
    db.wait_capturing(b.client().ping)
    base_a, base_b = da.counts(), db.counts()
    cs_a, cs_b = commands(a), commands(b)
    rng = random.Random(20261204)
    # A: the hot key every other command, 2,000 other keys between; B: 2,000 other keys.
    keys_a = [HOT if i % 2 == 0 else f"a:{rng.randrange(2000)}" for i in range(COMMANDS)]
    keys_b = [f"b:{rng.randrange(2000)}" for _ in range(COMMANDS)]
    load(a, keys_a)
    load(b, keys_b)
    da.wait_counted(base_a, COMMANDS)
    db.wait_counted(base_b, COMMANDS)
    delta_a, delta_b = da.settled() - base_a, db.settled() - base_b
    # The INFO calls of commands() are counted too: commandstats read after the tap.
    ran_a, ran_b = commands(a) - cs_a, commands(b) - cs_b
    check(not delta_a.drops() and not delta_b.drops(),
          f"no packet dropped (A {delta_a.drops()}, B {delta_b.drops()})")
    check(within(delta_a.commands, ran_a, 0.01),
          f"hotkeyd A counted {delta_a.commands:.0f} commands, A ran {ran_a} (within 1%)")
    check(within(delta_b.commands, ran_b, 0.01),
          f"hotkeyd B counted {delta_b.commands:.0f} commands, B ran {ran_b} (within 1%)")
    keys_seen_a, keys_seen_b = da.keys(), db.keys()
    check(HOT in keys_seen_a, f"hotkeyd A exports {HOT}")
    got = keys_seen_a[HOT]
    bound = got["share_error"] + SLACK
    check(abs(got["share"] - 0.5) <= bound,
          f"hotkeyd A: {HOT} at {got['share']:.4f} of A's traffic, 0.5 sent (±{bound:.4f})")
    check(HOT not in keys_seen_b, f"hotkeyd B does not report {HOT}")
    check(not any(k.startswith("a:") for k in keys_seen_b), "hotkeyd B reports none of A's keys")
    check(not any(k.startswith("b:") for k in keys_seen_a), "hotkeyd A reports none of B's keys")
    check(da.alive() and db.alive(), "both hotkeyds still serve")
    print(json.dumps({"case": "split", "share_a": got["share"],
                      "share_error_a": got["share_error"], "commands_a": delta_a.commands,
                      "commandstats_a": ran_a, "commands_b": delta_b.commands,
                      "commandstats_b": ran_b, "keys_b": len(keys_seen_b)}))


def case_two_ports_refused(work):
    out = subprocess.run([HOTKEYD, "--tap.interface=lo", "--tap.port=6379,6380",
                          "--web.listen-address=127.0.0.1:0"],
                         capture_output=True, text=True, timeout=10)
    check(out.returncode == 2, f"hotkeyd --tap.port=6379,6380 exits 2, got {out.returncode}")
    check("one hotkeyd per server instance" in out.stderr,
          f"it says to run one hotkeyd per instance: {out.stderr.strip()}")


CASES = [("split", case_split), ("two_ports_refused", case_two_ports_refused)]

if __name__ == "__main__":
    require_capture("tap_instances_e2e")
    require_programs("redis-server")
    if not hotkeyd_has_tap(HOTKEYD):
        sys.exit(f"FAIL: {HOTKEYD} has no --tap.interface flag (built without the tap?)")
    run_cases("tap_instances_e2e", CASES, sys.argv[2:])
