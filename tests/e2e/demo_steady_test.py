#!/usr/bin/env python3
"""demo_steady_test.py: `hotkeyd --demo` on its default settings keeps one fix per hot key.

Usage: demo_steady_test.py HOTKEYD_BIN

The demo's three celebrity keys each need a different fix (cache, split, split_cache) on
the default cluster, near the model's target: the advice must not flip. Once every hot key
is advised on the whole rate window (bounded wait) and one more window has passed,
/api/v1/top is polled four times a second for 30 s; every hot key must keep one advice, and
the three must differ. (A first advice comes over 5 s of the episode: on a loaded host the
demo's first seconds run a few % slow, and a key near the target may move once, until
those seconds have left the window. Seen in CI beside a sanitizer build:
item:flash-sale:stock's cache projected 0.797 at 9,047 ops/s over 5.2 s, 0.858 at 9,744 over
10 s, and the polls began at the evaluation before, which held cache.) Everything it starts
is stopped on exit.
"""

import collections
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import hotkeyd_e2e as e2e  # noqa: E402

POLL_SECONDS = 30
RATE_WINDOW = 10  # --track.rate-window's default
WANT = {"user:celebrity:profile": "cache", "post:viral:likes": "split",
        "item:flash-sale:stock": "split_cache"}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    work = e2e.Workdir("demo-steady")
    ok = False
    try:
        d = e2e.Hotkeyd(sys.argv[1], "--demo", work=work)
        d.wait_top(lambda t: sum(1 for k in t["keys"] if k["hot"] and k["advice"] and
                                 k["advised_on"]["seconds"] >= RATE_WINDOW - 0.001) >= 3,
                   "the demo's three hot keys advised on a whole rate window", timeout=60)
        time.sleep(RATE_WINDOW)  # the window then holds none of the demo's first seconds
        seen = collections.defaultdict(collections.Counter)
        polls = 0
        end = time.monotonic() + POLL_SECONDS
        while time.monotonic() < end:
            for k in d.top()["keys"]:
                if k["hot"]:
                    seen[k["key"]][k["advice"]] += 1
            polls += 1
            time.sleep(0.25)
        e2e.log(f"{polls} polls: " + "; ".join(f"{k} {dict(v)}" for k, v in seen.items()))
        fixes = {}
        for key in WANT:
            advice = seen.get(key, {})
            e2e.check(len(advice) == 1 and sum(advice.values()) == polls,
                      f"{key}: one fix at every one of {polls} polls ({dict(advice)})")
            fixes[key] = next(iter(advice))
        # The three fixes the demo is built for, on an unhurried host; a sanitizer build's
        # slower demo may land a key on a neighbouring fix, but three keys, three fixes.
        e2e.check(len(set(fixes.values())) == 3, f"three different fixes: {fixes}")
        if fixes != WANT:
            e2e.log(f"  note: fixes {fixes}, the demo's design {WANT}")
        ok = True
        print("PASS")
    except AssertionError as e:
        print(f"FAIL: {e}\n{work.log_tails()}")
    finally:
        e2e.Procs.stop_all()
        work.finish(ok)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
