#!/usr/bin/env python3
"""Runs `hotkey-sim model --json` and checks the JSON against hand-computed loads.

Usage: model_json_test.py PATH_TO_HOTKEY_SIM. Exit 0 when every check passes.
Defaults (T=50000, N=8, C=10000, A=50, refresh 1s, R=4, S=8, h=0.2, w=0.1) give
B = 5000 and H = 10000, so the busiest shard is at 1.5, 0.605, 0.825, 1.4125, 0.5175
of capacity under none, cache, replicate, split, split_cache; advice: cache.
"""
import json
import math
import subprocess
import sys


def run(sim, *args):
    return subprocess.run([sim, "model", "--json", *args], capture_output=True, text=True)


def main():
    sim = sys.argv[1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    r = run(sim)
    check(r.returncode == 0, f"default run exit {r.returncode}: {r.stderr}")
    doc = json.loads(r.stdout)
    rows = {row["strategy"]: row for row in doc["strategies"]}
    check([row["strategy"] for row in doc["strategies"]] ==
          ["none", "cache", "replicate", "split", "split_cache"], "row order")
    want = {"none": (1.5, 0.5, 1), "cache": (0.605, 0.5, 1), "replicate": (0.825, 0.5, 4),
            "split": (1.4125, 1.4125, 8), "split_cache": (0.5175, 0.5175, 8)}
    for name, (busiest, least, touched) in want.items():
        row = rows[name]
        check(math.isclose(row["busiest"], busiest), f"{name} busiest {row['busiest']}")
        check(math.isclose(row["least_busy"], least), f"{name} least_busy {row['least_busy']}")
        loads = row["shard_loads"]
        check(len(loads) == 8, f"{name} has {len(loads)} shard loads")
        check(sum(math.isclose(x, busiest) for x in loads) == (touched if touched < 8 else 8),
              f"{name} shards at the busiest load: {loads}")
        check(math.isclose(max(loads), row["busiest"]), f"{name} max(shard_loads)")
        check(row["fits"] == (busiest <= 0.8), f"{name} fits")
    check(doc["advice"] == "cache", f"advice {doc['advice']}")
    check(doc["cluster"]["shards"] == 8 and doc["hot_key"]["share"] == 0.2, "echoed inputs")

    # A custom order and cluster: N=4, R=4, h=0.5, w=0: replicate puts
    # B + H/4 = 12500/4... T=40000: B = 20000/4 = 5000, H = 20000, replicate 5000+5000.
    r = run(sim, "--ops", "40000", "--shards", "4", "--replicas", "4", "--split", "2",
            "--hot-share", "0.5", "--write-share", "0", "--capacity", "20000",
            "--order", "replicate,none")
    check(r.returncode == 0, f"custom run exit {r.returncode}: {r.stderr}")
    doc = json.loads(r.stdout)
    check([row["strategy"] for row in doc["strategies"]] == ["replicate", "none"],
          "custom order rows")
    check(doc["strategies"][0]["shard_loads"] == [0.5, 0.5, 0.5, 0.5], "replicate loads")
    check(doc["advice"] == "replicate", f"custom advice {doc['advice']}")

    # Bad input: exit 2, a message on stderr, nothing on stdout.
    r = run(sim, "--split", "0")
    check(r.returncode == 2 and "split" in r.stderr and r.stdout == "", "bad --split")

    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
