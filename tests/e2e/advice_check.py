#!/usr/bin/env python3
"""advice_check.py: the assertions of advice_e2e.sh, against a live hotkeyd.

  advice_check.py hot URL KEY=STRATEGY...      /api/v1/top: every KEY is hot (advice not checked)
  advice_check.py settled URL OPS              /api/v1/top: the shard's ops/s over the rate
                                               window is within 3% of OPS (the model's input
                                               has settled)
  advice_check.py advised URL KEY=STRATEGY...  /api/v1/top: every KEY is hot and advised (any fix)
  advice_check.py top URL KEY=STRATEGY...      /api/v1/top: every KEY is hot with that advice
  advice_check.py metrics URL KEY=STRATEGY...  /metrics: hotkey_key_hot{key} is 1 and
                                               hotkey_key_advice_info{key,strategy} says the
                                               same, and hotkey_key_projected_load_ratio has a
                                               series per strategy per key, consistent with it

Exit 0 when everything holds, 1 (with one line saying what is off) otherwise, so the shell
script can retry it in a bounded loop. Standard library only.
"""

import json
import re
import sys
import urllib.request

# The model's order (cheapest first) and target: the flags advice_e2e.sh gives hotkeyd.
ORDER = ["none", "cache", "replicate", "split", "split_cache"]
TARGET = 0.8
STRATEGIES = ORDER + ["isolate"]


def fetch(url):
    with urllib.request.urlopen(url, timeout=3) as r:
        return r.read().decode("utf-8")


def expected(args):
    want = {}
    for a in args:
        key, _, strategy = a.rpartition("=")
        if not key or strategy not in STRATEGIES:
            sys.exit(f"bad KEY=STRATEGY argument: {a!r}")
        want[key] = strategy
    return want


def check_settled(base, ops):
    snap = json.loads(fetch(base + "/api/v1/top"))
    got = snap["ops_per_second"]["read"] + snap["ops_per_second"]["write"]
    print(f"shard {got:.0f} ops/s (rate window), want {ops:.0f} +- 3%")
    return abs(got - ops) <= 0.03 * ops


def check_top(base, want, advice=True, advised=False):
    snap = json.loads(fetch(base + "/api/v1/top"))
    ops = snap["ops_per_second"]["read"] + snap["ops_per_second"]["write"]
    keys = {k["key"]: k for k in snap["keys"]}
    problems, notes = [], []
    for key, strategy in want.items():
        k = keys.get(key)
        if k is None:
            problems.append(f"{key}: not exported")
            continue
        loads = " ".join(f"{s}={v:.3f}" for s, v in k["projected_load"].items())
        notes.append(f"{key}: share={k['share']:.3f} writes={k['write_ratio']:.2f} "
                     f"hot={k['hot']} advice={k['advice']} [{loads}]")
        if not k["hot"]:
            problems.append(f"{key}: not hot")
        elif advised and k["advice"] is None:
            problems.append(f"{key}: not advised yet")
        elif advice and k["advice"] != strategy:
            problems.append(f"{key}: advice {k['advice']}, want {strategy}")
    print(f"shard {ops:.0f} ops/s (rate window); " + "; ".join(notes))
    if problems:
        print("not yet: " + "; ".join(problems))
        return False
    return True


SAMPLE = re.compile(r'^(\w+)\{(.*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def check_metrics(base, want):
    hot, advice, load = set(), {}, {}
    for line in fetch(base + "/metrics").splitlines():
        m = SAMPLE.match(line)
        if not m:
            continue
        name, labels, value = m.group(1), dict(LABEL.findall(m.group(2))), float(m.group(3))
        if name == "hotkey_key_hot" and value == 1:
            hot.add(labels.get("key"))
        elif name == "hotkey_key_advice_info" and value == 1:
            advice.setdefault(labels.get("key"), []).append(labels.get("strategy"))
        elif name == "hotkey_key_projected_load_ratio":
            load.setdefault(labels.get("key"), {})[labels.get("strategy")] = value
    problems = []
    for key, strategy in want.items():
        if key not in hot:
            problems.append(f'hotkey_key_hot{{key="{key}"}} is not 1')
        if advice.get(key) != [strategy]:
            problems.append(f'hotkey_key_advice_info{{key="{key}"}} has strategy '
                            f"{advice.get(key)}, want [{strategy}]")
        loads = load.get(key, {})
        missing = [s for s in ORDER if s not in loads]
        if missing:
            problems.append(f"{key}: no hotkey_key_projected_load_ratio for {missing}")
            continue
        # The advice is the first strategy in ORDER whose busiest shard is within the target:
        # the exported loads must say so too (every cheaper one over, the advised one under).
        i = ORDER.index(strategy) if strategy in ORDER else len(ORDER)
        over = [s for s in ORDER[:i] if not loads[s] > TARGET]
        if over:
            problems.append(f"{key}: {over} within the target, yet advice is {strategy}: {loads}")
        if strategy in ORDER and not loads[strategy] <= TARGET:
            problems.append(f"{key}: advised {strategy} projects {loads[strategy]:.3f} > {TARGET}")
    print("metrics: hot " + ", ".join(f"{k}={advice.get(k)}" for k in sorted(hot)))
    if problems:
        print("not yet: " + "; ".join(problems))
        return False
    return True


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("hot", "settled", "advised", "top", "metrics"):
        sys.exit(__doc__)
    cmd, base = sys.argv[1], sys.argv[2].rstrip("/")
    try:
        if cmd == "settled":
            ok = check_settled(base, float(sys.argv[3]))
        elif cmd == "metrics":
            ok = check_metrics(base, expected(sys.argv[3:]))
        else:
            ok = check_top(base, expected(sys.argv[3:]), advice=cmd == "top",
                           advised=cmd == "advised")
    except (OSError, ValueError, KeyError) as e:
        print(f"not yet: {type(e).__name__}: {e}")
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
