#!/usr/bin/python3
"""cluster_advice_e2e.py: the slot advice an expert would follow, on a real Redis Cluster.

Usage: cluster_advice_e2e.py HOTKEYD_BIN

On loopback it starts 6 redis-server nodes made one Redis Cluster of 3 primaries and 3
replicas (`redis-cli --cluster create ... --cluster-replicas 1`) and one hotkeyd per primary,
tapping its port (--tap.interface=lo, --shard.address of its node, --shard.interval=1s, no
--track.slots flag: the default, auto, counts slots because the shard says it is a cluster
node). A driver of 2 processes (redis.cluster.RedisCluster, python3-redis) sends RATE ops/s:
GET, 1 in 10 a SET; the background keys sweep all 16,384 slots. Each scenario measures every
primary from its own INFO (total_commands_processed over MEASURE_SECONDS), and runs the
advised script when there is one.

  balanced  background only: once every hotkeyd knows its peers' loads, no node is advised
            anything (`move` null, no slot advice) for QUIET_SECONDS.
  tag       TAG_SHARE of the ops on TAG_KEYS keys of one tag: the tag's slot is hot and
            advised `tag` with a split factor, and no node advises a move (no script to run);
            the nodes' commands/s are printed before and after.
  warm      WARM_SHARE of the ops on the keys of WARM_TAGS tags whose slots are all on one
            node (each slot far under the hot line): that node serves about 3x its peers and
            is advised one plan (reason over_peers) to both other primaries, the same plan on
            two reads 3 s apart; the plan's script runs once (its run time and the keys
            before and after are printed: no key lost); every primary's commands/s after it,
            from INFO, is within LOAD_TOLERANCE of the plan's projection (scaled by the
            driver's rate then over its rate at the plan); then no node is advised anything
            (the alert resolves).

Exits 77 (skipped, saying why) without root, under a sanitizer build, without redis-server,
redis-cli or Debian's python3-redis, and when the driver kept under MIN_RATE of its rate in a
window whose loads are compared (the other checks still run). Everything it starts is stopped.
"""

import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import slots_e2e as lab  # noqa: E402  (its cluster node, slot table and key slot helpers)

e2e = lab.e2e
log, check = e2e.log, e2e.check

SLOTS = lab.SLOTS
RATE = 1500
WORKERS = 2
WRITE_EVERY = 10
TAG = "42"
TAG_KEYS = 2000
TAG_SHARE = 0.35
WARM_TAGS = 200
WARM_KEYS_PER_TAG = 10
WARM_SHARE = 0.40
MEASURE_SECONDS = 10
QUIET_SECONDS = 8
LOAD_TOLERANCE = 0.10
MIN_RATE = 0.95
MODES = {"background": 0, "tag": 1, "warm": 2}


def worker(wid, port, bg, warm_keys, ctl, stop):
    """One driver process, paced as slots_e2e's: the mode's share exactly (error diffusion),
    the background over a permutation of the slots."""
    import logging
    import redis.cluster
    logging.getLogger("redis.cluster").setLevel(logging.CRITICAL)
    rc = redis.cluster.RedisCluster(host="127.0.0.1", port=port, socket_timeout=5)
    period = WORKERS / RATE
    next_t = time.monotonic()
    acc, seq, j, i = 0.0, 0, wid, wid
    while not stop.is_set():
        now = time.monotonic()
        if next_t > now:
            time.sleep(next_t - now)
        elif now - next_t > 0.1:
            next_t = now
        next_t += period
        mode = ctl["mode"].value
        share = {1: TAG_SHARE, 2: WARM_SHARE}.get(mode, 0.0)
        acc += share
        if acc >= 1.0:
            acc -= 1.0
            if mode == MODES["tag"]:
                key = f"profile:{{{TAG}}}:{i % TAG_KEYS}"
            else:
                key = warm_keys[i % len(warm_keys)]
            i += WORKERS
        else:
            slot = (j * 7919) % SLOTS
            key = bg[slot][(j // SLOTS) % lab.BG_KEYS_PER_SLOT]
            j += WORKERS
            with ctl["bg"].get_lock():
                ctl["bg"][wid] += 1
        seq += 1
        try:
            if seq % WRITE_EVERY == 0:
                rc.set(key, b"v")
            else:
                rc.get(key)
        except Exception:  # noqa: BLE001 (counted)
            with ctl["errors"].get_lock():
                ctl["errors"].value += 1
        with ctl["ops"].get_lock():
            ctl["ops"].value += 1


class Driver(lab.Driver):
    def __init__(self, port, bg, warm_keys):  # noqa: super().__init__ starts other workers
        self.ctl = dict(mode=mp.Value("i", 0), ops=mp.Value("q", 0), errors=mp.Value("q", 0),
                        bg=mp.Array("q", WORKERS))
        self.stop_ev = mp.Event()
        ctx = mp.get_context("fork")
        self.procs = [ctx.Process(target=worker,
                                  args=(w, port, bg, warm_keys, self.ctl, self.stop_ev),
                                  daemon=True) for w in range(WORKERS)]
        for p in self.procs:
            p.start()
        self.history = []
        self.sampling = threading.Event()
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.sampler.start()

    def set_mode(self, name):
        self.ctl["mode"].value = MODES[name]
        return time.monotonic()


def start(work, binary):
    nodes = [lab.Node(work, i) for i in range(6)]
    subprocess.run(["redis-cli", "--cluster", "create", *(n.address for n in nodes),
                    "--cluster-replicas", "1", "--cluster-yes"],
                   check=True, capture_output=True, timeout=60)
    for n in nodes:
        e2e.wait_until(lambda: b"cluster_state:ok" in n.client.execute_command("CLUSTER", "INFO"),
                       30, f"node {n.address} sees the cluster ok", interval=0.1)
    primaries = [n for n in nodes if n.client.info("replication")["role"] == "master"]
    replicas = [n for n in nodes if n not in primaries]
    check(len(primaries) == 3 and len(replicas) == 3, "3 primaries and 3 replicas")
    for r in replicas:
        e2e.wait_until(lambda: r.client.info("replication").get("master_link_status") == "up",
                       30, f"replica {r.address} linked", interval=0.1)
    rules = work.file("hotkeyd-rules.yml")
    with open(rules, "w") as f:
        f.write("alert:\n  min_dwell: 0s\nexport:\n  top_k: 10\n")
    for k, n in enumerate(primaries):
        n.i = k  # measure_commands indexes by it
        n.hotkeyd = e2e.Hotkeyd(binary, "--udp.listen-address=", "--tap.interface=lo",
                                f"--tap.port={n.port}", "--tap.protocol=redis",
                                f"--shard.address={n.address}", "--shard.interval=1s",
                                f"--config.file={rules}", work=work,
                                log_path=work.file(f"hotkeyd-{k}.log"))
    return primaries, replicas


def keys_total(nodes):
    return sum(int(n.client.execute_command("DBSIZE")) for n in nodes)


def advice(nodes):
    """{address: (move plan or None, [(slot, advice)] of the advised slots)}."""
    out = {}
    for n in nodes:
        js = n.slots()
        out[n.address] = (js["move"], [(s["slot"], s["advice"]) for s in js["slots"]
                                       if s["advice"] is not None])
    return out


def peers_known(nodes):
    for n in nodes:
        c = n.slots()["cluster"]
        if c is None or c["peers_up"] != 2:
            return False
        for x in c["nodes"]:
            if x["up"] is not True or x["capacity_ops"] is None:
                return False
    return True


def quiet(nodes, seconds, what):
    """No advice on any node for `seconds`, checked every 0.5 s."""
    seen = []
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        for a, (move, slots) in advice(nodes).items():
            if move is not None or slots:
                seen.append((a, move and move["slot_count"], slots))
        time.sleep(0.5)
    check(not seen, f"{what}: no node advised anything for {seconds} s (seen: {seen[:3]})")


def warm_keys_on(owner_port, table):
    """WARM_TAGS tags whose slots are distinct and all served by `owner_port`, and their keys."""
    tags, slots = [], set()
    i = 0
    while len(tags) < WARM_TAGS:
        tag = f"w{i}"
        s = lab.key_slot(tag.encode())
        if table[s] == owner_port and s not in slots:
            tags.append(tag)
            slots.add(s)
        i += 1
    keys = [f"warm:{{{t}}}:{k}" for k in range(WARM_KEYS_PER_TAG) for t in tags]
    return keys, slots


def run(binary):
    work = e2e.Workdir("cluster-advice")
    ok = False
    driver = None
    figures = {}
    skip = None
    try:
        t_start = time.monotonic()
        bg = lab.background_keys()
        nodes, replicas = start(work, binary)
        table = lab.owners(nodes)
        log("cluster: " + ", ".join(f"{n.address} {n.id[:8]} {table.count(n.port)} slots, "
                                    f"hotkeyd :{n.hotkeyd.web}" for n in nodes) +
            "; replicas " + ", ".join(r.address for r in replicas))
        warm_owner = nodes[0]
        warm_keys, warm_slots = warm_keys_on(warm_owner.port, table)
        # Every key the driver will touch exists before it starts, so the keys counted before
        # and after the script are the same set (the driver's SETs only overwrite).
        import redis.cluster
        rc = redis.cluster.RedisCluster(host="127.0.0.1", port=nodes[0].port, socket_timeout=10)
        everything = [k for ks in bg for k in ks] + warm_keys + \
            [f"profile:{{{TAG}}}:{i}" for i in range(TAG_KEYS)]
        for i in range(0, len(everything), 1000):
            pipe = rc.pipeline()
            for k in everything[i:i + 1000]:
                pipe.set(k, b"v")
            pipe.execute()
        rc.close()
        check(keys_total(nodes) == len(everything), f"{len(everything)} keys written")
        driver = Driver(nodes[0].port, bg, warm_keys)
        e2e.wait_until(driver.swept_all_slots, 40, "the background over every slot",
                       interval=0.2)
        # ------------------------------------------------------------ balanced
        e2e.wait_until(lambda: peers_known(nodes), 30,
                       "every hotkeyd knows both peers' loads and capacities", interval=0.5)
        loads, drate = lab.measure_commands(nodes, driver, MEASURE_SECONDS)
        log(f"balanced: driver {drate:.0f} ops/s; commands/s {[round(x) for x in loads]}")
        for n in nodes:
            c = n.slots()["cluster"]
            log(f"balanced: {n.address}: {c['ops_per_second']:.0f} commands/s, peers' mean "
                f"{c['peers_mean_ops_per_second']:.0f}, ratio {c['peers_ratio']:.2f}; nodes "
                + json.dumps([(x["address"], x["up"], round(x["capacity_ops"] or 0))
                              for x in c["nodes"]]))
            check(e2e.metric_value(n.hotkeyd.metrics_text(), "hotkey_slot_move_advised") == 0,
                  f"{n.address}: /metrics hotkey_slot_move_advised 0")
        quiet(nodes, QUIET_SECONDS, "balanced")
        figures["balanced"] = [round(x) for x in loads]

        # ------------------------------------------------------------ tag
        slot = lab.key_slot(f"profile:{{{TAG}}}:0".encode())
        owner = next(n for n in nodes if n.port == table[slot])
        before, rate0 = lab.measure_commands(nodes, driver, MEASURE_SECONDS)
        t_on = driver.set_mode("tag")

        def tag_advised():
            js = owner.slots()
            s = next((x for x in js["slots"] if x["slot"] == slot), None)
            return s and s["hot"] and s["advice"] == "tag" and (s, js)
        s, js = e2e.wait_until(tag_advised, 20, f"slot {slot} hot and advised tag on "
                               f"{owner.address}", interval=0.2)
        log(f"tag: advised in {time.monotonic() - t_on:.1f} s: slot {json.dumps(s)}")
        check(s["top_tag"] == TAG and s["top_tag_share"] >= 0.5,
              f"the slot's top tag is {TAG} ({s['top_tag_share']:.2f} of it)")
        check(s["tag_split"] >= 2, f"a split factor is advised ({s['tag_split']})")
        metrics = owner.hotkeyd.metrics_text()
        check(e2e.metric_value(metrics, "hotkey_slot_advice_info",
                               {"slot": str(slot), "advice": "tag"}) == 1,
              "/metrics: hotkey_slot_advice_info{advice=\"tag\"} 1")
        t = next((x for x in js["tags"] if x["tag"] == TAG), None)
        check(t is not None and t["ops_per_second"] <= s["ops_per_second"] * 1.0001,
              f"the tag's ops/s ({t and t['ops_per_second']:.0f}) on its slot's basis, not "
              f"above the slot's ({s['ops_per_second']:.0f})")
        # Through the rate window: still no move anywhere, and no script to run.
        t_end = t_on + 12
        moves = []
        while time.monotonic() < t_end:
            moves += [a for a, (m, _) in advice(nodes).items() if m is not None]
            time.sleep(0.5)
        check(not moves, f"tag: no node advises a move ({sorted(set(moves))})")
        after, rate1 = lab.measure_commands(nodes, driver, MEASURE_SECONDS)
        js = owner.slots()
        c = js["cluster"]
        s = next((x for x in js["slots"] if x["slot"] == slot), None)
        t = next((x for x in js["tags"] if x["tag"] == TAG), None)
        log(f"tag: with the window full: slot share {s and s['share']:.3f}, ops/s "
            f"{s and s['ops_per_second']:.0f}, advice {s and s['advice']}, split "
            f"{s and s.get('tag_split')}; tag share {t and t['share']:.3f}, ops/s "
            f"{t and t['ops_per_second']:.0f}")
        check(s is not None and s["advice"] == "tag", "still advised tag")
        log(f"tag: no script (advice tag); commands/s per node before the tag "
            f"{[round(x) for x in before]} (driver {rate0:.0f}), with it "
            f"{[round(x) for x in after]} (driver {rate1:.0f}); the owner "
            f"{owner.address} at {c['peers_ratio']:.2f}x its peers")
        figures["tag"] = {"before": [round(x) for x in before], "after": [round(x) for x in after]}
        driver.set_mode("background")
        e2e.wait_until(lambda: all(m is None and not sl for m, sl in advice(nodes).values()), 30,
                       "the tag's advice ends with its traffic", interval=0.5)

        # ------------------------------------------------------------ warm
        before, rate0 = lab.measure_commands(nodes, driver, MEASURE_SECONDS)
        t_on = driver.set_mode("warm")
        log(f"warm: {WARM_SHARE:.0%} of the ops on {len(warm_keys)} keys of {WARM_TAGS} tags "
            f"in {len(warm_slots)} slots of {warm_owner.address}; before: commands/s "
            f"{[round(x) for x in before]} (driver {rate0:.0f})")

        def plan_advised():
            js = warm_owner.slots()
            return js["move"] is not None and js

        e2e.wait_until(lambda: time.monotonic() > t_on + 11 and plan_advised(), 40,
                       f"a plan on {warm_owner.address} once the window holds the warm phase",
                       interval=0.5)
        loads_plan, plan_rate = lab.measure_commands(nodes, driver, MEASURE_SECONDS)
        js = plan_advised()
        check(js, "the plan is still advised")
        plan = js["move"]
        time.sleep(3)
        again = warm_owner.slots()["move"]
        def summary(m):
            return m and {"goal": m["goal"], "from": m["from"]["ops_per_second_after"],
                          "to": [(t["address"], len(t["slots"]), t["ops_per_second_after"],
                                  t["load_after"]) for t in m["to"]]}
        check(again is not None and [t["slots"] for t in again["to"]] ==
              [t["slots"] for t in plan["to"]],
              f"the same plan on two reads 3 s apart (hysteresis): {summary(plan)}, "
              f"then {summary(again)}")
        check(js["hot_slots"] == 0, f"no slot is hot ({js['hot_slots']})")
        check(plan["reason"] == "over_peers", f"reason {plan['reason']}")
        check(len(plan["to"]) == 2, f"the plan goes to both other primaries ({len(plan['to'])})")
        check(all(x[0] is None for a, x in advice(nodes).items() if a != warm_owner.address),
              "no other node advises a move")
        check(e2e.metric_value(warm_owner.hotkeyd.metrics_text(), "hotkey_slot_move_advised")
              == 1, "/metrics: hotkey_slot_move_advised 1")
        moved = [s for t in plan["to"] for s in t["slots"]]
        check(set(moved) <= warm_slots | set(range(SLOTS)), "slots are slot numbers")
        log(f"warm: plan at driver {plan_rate:.0f} ops/s: {plan['slot_count']} slots "
            f"({sum(1 for s in moved if s in warm_slots)} of the warm tags'), goal "
            f"{plan['goal']:.3g} ({'load' if plan['in_load'] else 'commands/s'}), peers' mean "
            f"{plan['peers_mean']:.3g}; from {warm_owner.address} "
            f"{plan['from']['ops_per_second_before']:.0f} -> "
            f"{plan['from']['ops_per_second_after']:.0f}; " +
            "; ".join(f"to {t['address']} {len(t['slots'])} slots "
                      f"{t['ops_per_second_before']:.0f} -> {t['ops_per_second_after']:.0f}"
                      for t in plan["to"]) +
            f"; INFO at the plan {[round(x) for x in loads_plan]}")
        script = work.file("move.sh")
        with open(script, "w") as f:
            f.write(plan["commands"])
        log("warm: script header:\n" + "\n".join(
            line for line in plan["commands"].splitlines()[:12] if line.startswith("#")))
        keys_before = keys_total(nodes)
        t0 = time.monotonic()
        mv = subprocess.run(["bash", script], capture_output=True, text=True, timeout=600)
        run_s = time.monotonic() - t0
        check(mv.returncode == 0, f"the script ran (stderr {mv.stderr[-400:]!r})")
        keys_after = keys_total(nodes)
        log(f"warm: move.sh ({len(plan['commands'].splitlines())} lines) ran in {run_s:.1f} s; "
            f"keys before {keys_before}, after {keys_after}; driver errors {driver.errors()}")
        check(keys_after == keys_before, f"no key lost or made ({keys_before} -> {keys_after})")

        def moved_all():
            try:
                t = lab.owners(nodes)
            except AssertionError:
                return None
            ok_ = all(t[s] == next(n.port for n in nodes if n.id == tr["id"])
                      for tr in plan["to"] for s in tr["slots"])
            return t if ok_ else None
        table = e2e.wait_until(moved_all, 20, "every node agrees on the moved slots",
                               interval=0.2)
        e2e.settle(driver.errors, timeout=20, quiet=2)
        time.sleep(2)
        after, mrate = lab.measure_commands(nodes, driver, MEASURE_SECONDS)
        scale = mrate / plan_rate if plan_rate else 0
        projected = {plan["from"]["address"]: plan["from"]["ops_per_second_after"]}
        for t in plan["to"]:
            projected[t["address"]] = t["ops_per_second_after"]
        rows = []
        for n in nodes:
            p = projected.get(n.address)
            if p is None:
                continue
            err = after[n.i] / (p * scale) - 1
            rows.append((n, p * scale, err))
            log(f"warm: {n.address}: before {before[n.i]:.0f}, at the plan "
                f"{loads_plan[n.i]:.0f}, projected {p:.0f} ({p * scale:.0f} at driver "
                f"{mrate:.0f}), after {after[n.i]:.0f} commands/s ({err:+.1%})")
        figures["warm"] = {"before": [round(x) for x in loads_plan],
                           "projected": [round(p) for _, p, _ in rows],
                           "after": [round(x) for x in after], "run_seconds": round(run_s, 1),
                           "keys": [keys_before, keys_after], "slots": plan["slot_count"]}
        if min(plan_rate, mrate) < MIN_RATE * RATE:
            skip = (f"the driver kept {plan_rate:.0f} and {mrate:.0f} ops/s, under "
                    f"{MIN_RATE:.0%} of {RATE}: a loaded machine")
            log(f"warm: NOT JUDGED: {skip}")
        else:
            for n, p, err in rows:
                check(abs(err) <= LOAD_TOLERANCE,
                      f"{n.address} within {LOAD_TOLERANCE:.0%} of its projection ({err:+.1%})")
        check(max(after) < 1.5 * min(after), f"balanced in one round: {[round(x) for x in after]}")
        e2e.wait_until(lambda: all(m is None for m, _ in advice(nodes).values()), 30,
                       "no node advises a move once the plan ran", interval=0.5)
        quiet(nodes, QUIET_SECONDS, "after the plan")
        check(driver.alive(), "the driver ran to the end")
        log(f"driver: {driver.ops()} ops, {driver.errors()} errors; "
            f"{time.monotonic() - t_start:.0f} s in all")
        log("figures: " + json.dumps(figures))
        ok = True
        if skip:
            log(f"SKIP: {skip}")
            return 77
        return 0
    except Exception as e:  # noqa: BLE001
        log(f"FAIL: {type(e).__name__}: {e}\n{work.log_tails()}")
        return 1
    finally:
        if driver:
            driver.close()
        e2e.Procs.stop_all()
        work.finish(ok)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if os.environ.get("HOTKEY_SANITIZER"):
        print("SKIP: not under a sanitizer: the load is paced in real time")
        sys.exit(77)
    if os.geteuid() != 0:
        print("SKIP: the tap needs CAP_NET_RAW (run as root)")
        sys.exit(77)
    missing = [t for t in ("redis-server", "redis-cli") if not shutil.which(t)]
    if missing:
        print(f"SKIP: not installed: {', '.join(missing)}")
        sys.exit(77)
    try:
        import redis.cluster  # noqa: F401
    except ImportError:
        print("SKIP: Debian's python3-redis (redis.cluster) is missing")
        sys.exit(77)
    sys.exit(run(sys.argv[1]))


if __name__ == "__main__":
    main()
