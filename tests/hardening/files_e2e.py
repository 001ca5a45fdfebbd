#!/usr/bin/env python3
"""files_e2e.py: hotkeyd with the wrong kind of file where it expects its own files.

Runs the real hotkeyd binary on loopback ports and checks, each case asserted:
  state_large  a 512 MiB (sparse) file at --storage.path: the daemon is ready, reports
               the file ("larger than"), moves it aside unread (RSS stays far below the
               file's size) and starts empty; the next start finds no file
  state_fifo   a FIFO at --storage.path (no writer): the daemon is ready rather than
               waiting on it, reports "not a regular file" and moves the FIFO aside
  rules_fifo   the rules file replaced by a FIFO, then SIGHUP: the reload fails at once
               (hotkey_config_last_reload_successful 0, "not a regular file" logged) and
               /metrics keeps answering; the old config stays in force

Prints one JSON line of figures per case and exits non-zero if a case failed. Loopback
only; every wait is bounded; everything started is stopped.

Usage: files_e2e.py HOTKEYD [CASE ...]
"""

import json
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from hotkeyd_e2e import Hotkeyd, check, run_cases, wait_until  # noqa: E402

HOTKEYD = sys.argv[1]
READY_TIMEOUT = 10  # a start that waits on a FIFO never gets there


def moved_aside(directory, name):
    return [f for f in os.listdir(directory) if f.startswith(name + ".bad-")]


def case_state_large(work):
    state = work.file("large.state")
    size = 512 << 20
    with open(state, "wb") as f:
        f.write(b"HKSTATE1")
        f.truncate(size)  # sparse: costs no disk, but read whole it would take 512 MiB
    d = Hotkeyd(HOTKEYD, f"--storage.path={state}", work=work, ready_timeout=READY_TIMEOUT)
    try:
        rss = d.rss()
        logs = d.logs()
        check(b"saved state unusable" in logs and b"larger than" in logs,
              "the oversized file is reported as such")
        check(not os.path.exists(state) and moved_aside(work.path, "large.state"),
              "and moved aside")
        check(rss < size // 4, f"and never read: RSS {rss >> 20} MiB for a {size >> 20} MiB file")
        check(d.top()["tracked_keys"] == 0, "the daemon starts empty")
    finally:
        d.stop()
    d = Hotkeyd(HOTKEYD, f"--storage.path={state}", work=work, ready_timeout=READY_TIMEOUT)
    try:
        check(b"saved state unusable" not in d.logs(), "the next start finds no bad file")
    finally:
        d.stop()
    print(json.dumps({"case": "state_large", "file_bytes": size, "rss_bytes": rss}))


def case_state_fifo(work):
    state = work.file("fifo.state")
    os.mkfifo(state)
    t0 = time.monotonic()
    d = Hotkeyd(HOTKEYD, f"--storage.path={state}", work=work, ready_timeout=READY_TIMEOUT)
    ready_s = time.monotonic() - t0
    try:
        check(b"not a regular file" in d.logs(), "the FIFO is reported as not a regular file")
        check(not os.path.exists(state) and moved_aside(work.path, "fifo.state"),
              "and moved aside")
    finally:
        d.stop()
    print(json.dumps({"case": "state_fifo", "ready_seconds": round(ready_s, 3)}))


def case_rules_fifo(work):
    rules = work.file("rules.yml")
    with open(rules, "w") as f:
        f.write("alert:\n  share_threshold: 0.3\n")
    d = Hotkeyd(HOTKEYD, f"--config.file={rules}", work=work, ready_timeout=READY_TIMEOUT)
    try:
        os.unlink(rules)
        os.mkfifo(rules)
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: d.metric("hotkey_config_last_reload_successful") == 0, 5,
                   "hotkey_config_last_reload_successful 0 after SIGHUP with a FIFO")
        check(b"not a regular file" in d.logs(), "the reload failure names the FIFO")
        t0 = time.monotonic()
        status = d.get("/metrics", timeout=5)[0]
        scrape_s = time.monotonic() - t0
        check(status == 200, "/metrics answers after the failed reload")
        check(d.proc.poll() is None, "and the daemon runs on")
    finally:
        d.stop()
    print(json.dumps({"case": "rules_fifo", "scrape_seconds": round(scrape_s, 3)}))


CASES = [("state_large", case_state_large), ("state_fifo", case_state_fifo),
         ("rules_fifo", case_rules_fifo)]

if __name__ == "__main__":
    run_cases("files", CASES, sys.argv[2:])
