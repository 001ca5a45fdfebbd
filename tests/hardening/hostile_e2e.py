#!/usr/bin/env python3
"""hostile_e2e.py: hotkeyd against hostile and broken input, overload and misuse.

Runs the real hotkeyd binary on loopback ports and checks, each case asserted:
  input      invalid UTF-8, NUL and control bytes, a 65,002-byte key, a 65,507-byte
             datagram, a line without newline, empty datagrams: exact event and rejection
             counts (the long key tracked as its prefix, not rejected), and a scrape that
             promtool accepts, in valid UTF-8
  cardinality  10 million distinct keys: RSS stays within a few MiB of its start
  flood      several senders flat out at a small receive buffer: /metrics keeps answering
             within its deadline, and every datagram sent is either counted or a counted
             kernel drop (datagrams received + kernel drops == datagrams sent)
  http       idle and half-open connections, slow (one byte a second) clients and an
             oversized request cannot block a scrape or grow memory
  sighup     SIGHUP with a broken rules file: the daemon runs on with the old config and
             hotkey_config_last_reload_successful 0
  sources    --udp.allowed-sources: datagrams from elsewhere are dropped and counted
  privacy    export.key_label hash with a secret file: no key bytes in /metrics, /api or logs

Prints one JSON line of figures per case (for the closing note) and exits non-zero on
the first failure. Loopback only; every wait is bounded; everything started is stopped.

Usage: hostile_e2e.py HOTKEYD HOTKEY_SIM [CASE ...]
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from hotkeyd_e2e import (SANITIZED, Hotkeyd, Procs, Workdir, check,  # noqa: E402
                         wait_until)

HOTKEYD, SIM = sys.argv[1], sys.argv[2]
ONLY = set(sys.argv[3:])
WORK = Workdir("hostile")
TMP = WORK.path


class Daemon(Hotkeyd):
    """hotkeyd with a 50 ms publish interval, so counts show within a tick."""

    def __init__(self, *flags):
        super().__init__(HOTKEYD, "--track.publish-interval=50ms", *flags, work=WORK,
                         ready_timeout=10)

    def settle(self, field="datagrams_received", want=None):
        """The counter `field` of /api/v1/top once it reaches `want`, or (no `want`) once
        it stops moving."""
        if want is None:
            return self.settled_top_field(field, timeout=10, quiet=0.3)
        return self.wait_top_field(field, want)[field]

    def metric(self, name, labels=""):
        """The sample `name{labels}` (labels as written on the page), or None."""
        m = re.search(rf"^{re.escape(name + labels)} (\S+)$", self.metrics_text(), re.M)
        return float(m.group(1)) if m else None

    def metrics(self):
        return self.metrics_text()


def sim_send(d, *flags, seconds):
    out = subprocess.run([SIM, "send", "--to", f"127.0.0.1:{d.udp}", "--duration",
                          f"{seconds}s", *flags], capture_output=True, text=True, timeout=seconds + 30)
    m = re.search(r"sent (\d+) events in (\d+) datagrams", out.stdout + out.stderr)
    assert m, out.stdout + out.stderr
    return int(m.group(1)), int(m.group(2))


def promtool_check(text):
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
    return r.returncode == 0, r.stdout.decode() + r.stderr.decode()


# ------------------------------------------------------------------------------ cases

def case_input():
    d = Daemon("--key.max-bytes=1024")
    try:
        big_lines = b"\n".join(b"r k%05d" % i for i in range(65507 // 8))[:65507]
        n_big = big_lines.count(b"\n") + 1
        datagrams = [
            b"r \xff\xfe\x80bad",                  # invalid UTF-8: 1 event
            b"w nul\x00in\x00key",                 # NUL bytes: 1 event
            b"r ctl\x01\x02\x1b[31m\x7f",          # control bytes, an escape sequence: 1 event
            b"r " + b"x" * 65000,                  # a 65,000-byte key: 1 event, kept as a prefix
            big_lines,                             # a full 65,507-byte datagram of events
            b"r no-newline-at-end",                # 1 event
            b"",                                   # empty datagram: nothing
            b"\n\n",                               # two empty lines (the last newline ends one)
            b"x bad-op\nr good\nr\nr@2 k\n",        # unknown_op, 1 event, missing_key, bad_number
        ]
        d.send(*datagrams)
        d.settle(want=len(datagrams))
        t = d.top()
        expected_events = 3 + 1 + n_big + 1 + 1
        check(t["datagrams_received"] == len(datagrams), f"{len(datagrams)} datagrams counted")
        check(t["events_received"] == expected_events,
              f"events counted exactly ({t['events_received']} == {expected_events})")
        r = t["events_rejected"]
        check(r["key_too_long"] == 0 and r["unknown_op"] == 1 and r["missing_key"] == 1 and
              r["bad_number"] == 1 and r["empty_line"] == 2, f"rejections by reason: {r}")
        text = d.metrics()
        ok, out = promtool_check(text)
        check(ok, "promtool check metrics accepts the page " + out.strip())
        # Made the top key, the invalid-UTF-8 key is exported with its bytes escaped.
        d.send(b"\n".join([b"r \xff\xfe\x80bad"] * 5000))
        d.settle(want=len(datagrams) + 1)
        text = d.metrics()
        check('hotkey_key_share_ratio{key="\\\\xff\\\\xfe\\\\x80bad"}' in text,
              "the invalid-UTF-8 key is exported escaped")
        ok, out = promtool_check(text)
        check(ok, "promtool check metrics accepts it " + out.strip())
        check(d.proc.poll() is None, "still running")
        print(json.dumps({"case": "input", "datagrams": len(datagrams),
                          "events": t["events_received"], "rejected": r}))
    finally:
        d.stop()


def case_cardinality():
    d = Daemon()
    try:
        # On purpose: RSS at start is read after half a second of running. No event marks
        # the end of start-up, and RSS keeps creeping for seconds after it (idle or not),
        # so it never holds still long enough to poll for.
        time.sleep(0.5)
        rss0 = d.rss()
        sim_send(d, "--rate", "2000000", "--keys", "1000000", "--zipf", "0.01", seconds=0.5)
        d.settle()
        rss1m = d.rss()
        sent, _ = sim_send(d, "--rate", "2000000", "--keys", "10000000", "--zipf", "0.01",
                           "--seed", "2", seconds=5)
        d.settle()
        rss10m = d.rss()
        mib = 1 << 20
        check(sent >= 9_000_000, f"{sent} events over a 10M key space")
        check(SANITIZED or rss10m - rss0 < 8 * mib,
              f"RSS flat: {rss0 / mib:.1f} MiB at start, {rss1m / mib:.1f} after 1M keys, "
              f"{rss10m / mib:.1f} after 10M")
        check(d.metric("hotkey_tracked_keys") <= 104,  # the default --track.candidates
              "tracked keys bounded by the table")
        print(json.dumps({"case": "cardinality", "rss_start_bytes": rss0, "rss_1m_keys_bytes": rss1m,
                          "rss_10m_keys_bytes": rss10m, "events": sent}))
    finally:
        d.stop()


def case_flood():
    d = Daemon("--udp.read-buffer=256KiB")
    try:
        stop = threading.Event()
        latencies, failures = [], []

        def scrape():
            while not stop.is_set():
                t0 = time.monotonic()
                try:
                    status, body = d.get("/metrics", timeout=1.0)
                    latencies.append(time.monotonic() - t0)
                    if status != 200 or b"hotkey_events_received_total" not in body:
                        failures.append(status)
                except OSError as e:
                    failures.append(str(e))
                time.sleep(0.05)  # paced: a scraper every 50 ms, not a second flood

        scraper = threading.Thread(target=scrape)
        scraper.start()
        results = []

        def flood(seed):
            results.append(sim_send(d, "--rate", "0", "--seed", str(seed), seconds=4))

        senders = [threading.Thread(target=flood, args=(i,)) for i in range(3)]
        t0 = time.monotonic()
        for s in senders:
            s.start()
        for s in senders:
            s.join()
        elapsed = time.monotonic() - t0
        received = d.settle()
        stop.set()
        scraper.join()
        t = d.top()
        drops = t["kernel_drops"]
        sent_events = sum(r[0] for r in results)
        sent_datagrams = sum(r[1] for r in results)
        check(not failures, f"every scrape answered 200 within 1 s ({len(latencies)} scrapes)")
        check(received + drops == sent_datagrams,
              f"nothing lost uncounted: {received} received + {drops} kernel drops == "
              f"{sent_datagrams} sent")
        check(t["events_rejected"]["bad_number"] == 0 and t["events_rejected"]["unknown_op"] == 0,
              "no datagram was misread under load")
        print(json.dumps({"case": "flood", "offered_events_per_second": round(sent_events / elapsed),
                          "accepted_events": t["events_received"], "sent_events": sent_events,
                          "datagrams_sent": sent_datagrams, "datagrams_received": received,
                          "kernel_drops": drops,
                          "worst_scrape_seconds": round(max(latencies), 4),
                          "median_scrape_seconds": round(sorted(latencies)[len(latencies) // 2], 4)}))
    finally:
        d.stop()


def case_http():
    d = Daemon()
    try:
        rss0 = d.rss()
        socks = []
        for _ in range(200):  # idle connections that never send a byte
            s = socket.create_connection(("127.0.0.1", d.web))
            socks.append(s)
        for _ in range(20):  # half a request line, then silence (half-open)
            s = socket.create_connection(("127.0.0.1", d.web))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        slow_stop = threading.Event()

        def slowloris():
            s = socket.create_connection(("127.0.0.1", d.web))
            s.sendall(b"GET / HTTP/1.1\r\n")
            while not slow_stop.is_set():
                try:
                    s.sendall(b"X-a: b\r\n")
                except OSError:
                    return
                time.sleep(1)  # paced: a slow client sends one header line a second

        slow = [threading.Thread(target=slowloris) for _ in range(20)]
        for t in slow:
            t.start()
        worst, statuses = 0, []
        for _ in range(20):
            t0 = time.monotonic()
            try:
                statuses.append(d.get("/metrics", timeout=2)[0])
            except OSError as e:
                statuses.append(str(e))
            worst = max(worst, time.monotonic() - t0)
            time.sleep(0.05)  # paced: 20 scrapes spread over the slow clients' second
        check(all(s == 200 for s in statuses),
              f"every scrape answers beside idle, half-open and slow clients: {set(statuses)}")
        check(worst < 1.0, f"worst scrape {worst:.3f} s with 240 idle, half-open and slow clients")
        # An oversized request is refused, not buffered.
        big = socket.create_connection(("127.0.0.1", d.web))
        big.sendall(b"POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n")
        try:
            big.sendall(b"x" * (1 << 20))
        except OSError:
            pass
        big.settimeout(5)
        reply = b""
        try:
            reply = big.recv(4096)
        except OSError:
            pass
        check(reply.startswith(b"HTTP/1.1 413") or reply == b"",
              "a 100 MB request body is refused (413) or the connection closed")
        huge_header = socket.create_connection(("127.0.0.1", d.web))
        huge_header.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
        huge_header.settimeout(5)
        try:
            reply = huge_header.recv(4096)
        except OSError:
            reply = b""
        check(reply.startswith(b"HTTP/1.1 413") or reply.startswith(b"HTTP/1.1 431") or
              reply == b"", "a 100 KB header is refused")
        check(SANITIZED or d.rss() - rss0 < 16 << 20,
              f"RSS grew {(d.rss() - rss0) / (1 << 20):.1f} MiB")
        check(d.get("/metrics")[0] == 200, "still scraping afterwards")
        slow_stop.set()
        for t in slow:
            t.join()
        for s in socks + [big, huge_header]:
            s.close()
        print(json.dumps({"case": "http", "worst_scrape_seconds": round(worst, 4),
                          "idle_connections": 200, "half_open": 20, "slow_clients": 20}))
    finally:
        d.stop()


def case_sighup():
    rules = os.path.join(TMP, "rules.yml")
    with open(rules, "w") as f:
        f.write("alert:\n  share_threshold: 0.3\n")
    d = Daemon(f"--config.file={rules}")
    try:
        with open(rules, "w") as f:
            f.write("alert:\n  share_threshold: [not, a, number\n")
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: d.metric("hotkey_config_last_reload_successful") == 0, 5,
                   "hotkey_config_last_reload_successful 0")
        check(d.proc.poll() is None, "still running after SIGHUP with a broken file")
        d.send(b"r k\n" * 1 + b"r hot\n" * 9)
        threshold = wait_until(
            lambda: d.metric("hotkey_key_share_threshold_ratio", '{key="hot"}'), 5,
            'hotkey_key_share_threshold_ratio{key="hot"}')
        check(abs(threshold - 0.3) < 1e-9, "the old threshold (0.3) stays in force")
        check(b"reload failed" in d.logs(), "the failure is logged")
        with open(rules, "w") as f:
            f.write("alert:\n  share_threshold: 0.2\n")
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: d.metric("hotkey_config_last_reload_successful") == 1, 5,
                   "a fixed file to reload (hotkey_config_last_reload_successful 1)")
    finally:
        d.stop()


def case_sources():
    d = Daemon("--udp.allowed-sources=10.0.0.0/8,192.168.0.0/16")
    try:
        d.send(b"r k\n", b"r k\n", b"r k\n")
        d.settle(want=3)
        t = d.top()
        check(t["datagrams_denied"] == 3 and t["events_received"] == 0,
              "datagrams from 127.0.0.1 outside the allowed sources are dropped and counted")
        check(d.metric("hotkey_datagrams_rejected_total", '{reason="source_denied"}') == 3,
              "hotkey_datagrams_rejected_total{reason=\"source_denied\"} == 3")
    finally:
        d.stop()
    d = Daemon("--udp.allowed-sources=127.0.0.0/8")
    try:
        d.send(b"r k\n")
        d.settle(want=1)
        check(d.top()["events_received"] == 1, "an allowed source is counted")
    finally:
        d.stop()


def rules_flag(name, text):
    """--config.file naming a rules file in TMP that holds `text` (the policy settings)."""
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return f"--config.file={path}"


def case_privacy():
    secret = os.path.join(TMP, "secret")
    with open(secret, "w") as f:
        f.write("0123456789abcdef0123456789abcdef\n")
    d = Daemon(rules_flag("privacy.yml", "alert:\n  min_dwell: 0s\nexport:\n  key_label: hash\n"),
               f"--key.hash-secret-file={secret}")
    try:
        for _ in range(20):
            d.send(b"r user:alice-secret-id\n" * 30 + b"r other:bob-secret-id\n" * 10)
        d.settle("events_received", want=20 * 40)
        hot = wait_until(
            lambda: re.findall(r'hotkey_key_hot\{key="(h:[0-9a-f]{16})"', d.metrics()), 5,
            "the hot key exported hashed")
        check(len(hot) >= 1, f"the hot key is exported hashed ({hot})")
        text = d.metrics()
        api = d.get("/api/v1/top")[1]
        logs = d.logs()
        for where, blob in (("/metrics", text.encode()), ("/api/v1/top", api), ("logs", logs)):
            check(b"alice" not in blob and b"bob" not in blob and b"secret-id" not in blob,
                  f"no key bytes in {where}")
    finally:
        d.stop()
    # The public key: a different label for the same key.
    d2 = Daemon(rules_flag("privacy-public.yml", "export:\n  key_label: hash\n"))
    try:
        for _ in range(20):
            d2.send(b"r user:alice-secret-id\n" * 30)
        other = wait_until(
            lambda: re.findall(r'hotkey_key_share_ratio\{key="(h:[0-9a-f]{16})"', d2.metrics()),
            5, "the key exported hashed with the public key")
        check(other and other[0] not in hot, "the label depends on the secret")
    finally:
        d2.stop()


def case_restart():
    state = os.path.join(TMP, "state")
    # export.min_key_ops 0: each restart below reads the restored keys before any new
    # traffic, when no key has ops in the rate window yet; the gate would hide them all.
    flags = [f"--storage.path={state}", "--storage.interval=1s", "--track.half-life=5s",
             rules_flag("restart.yml", "export:\n  min_key_ops: 0\n")]
    d = Daemon(*flags)
    try:
        for _ in range(40):  # "hot:restart" takes 40% of the traffic
            d.send(b"\n".join([b"r hot:restart"] * 40 + [b"r cold:%d" % i for i in range(60)]))
            time.sleep(0.02)  # paced: spread over 0.8 s, not one burst
        wait_until(lambda: os.path.exists(state), 5, "state saved within its interval")
    finally:
        d.kill()  # SIGKILL: no shutdown save
    kills = 0
    for i in range(6):
        d = Daemon(*flags)
        try:
            keys = [k["key"] for k in d.top()["keys"]]
            check("hot:restart" in keys, f"restart {i}: the hot key is restored ({keys[:3]})")
            check(b"state restored" in d.logs(), f"restart {i}: restore logged")
            # Keep it busy and kill it at a random moment, saves included.
            d.send(b"\n".join([b"r hot:restart"] * 40 + [b"r cold:x"] * 60))
            time.sleep(0.3 + 0.37 * i)  # on purpose: a kill at a different moment each time
        finally:
            d.kill()
            kills += 1
    check(not [f for f in os.listdir(TMP) if f.startswith("state.bad")],
          f"no state file was ever torn across {kills} SIGKILLs")
    with open(state, "wb") as f:
        f.write(b"HKHH garbage")
    d = Daemon(*flags)
    try:
        check(d.proc.poll() is None, "a corrupt state file does not stop the daemon")
        check(b"saved state unusable" in d.logs(), "the corrupt file is reported")
        check([f for f in os.listdir(TMP) if f.startswith("state.bad")], "and moved aside")
        check(d.top()["tracked_keys"] == 0, "and the daemon starts empty")
    finally:
        d.stop()
    print(json.dumps({"case": "restart", "sigkills": kills}))


CASES = [("input", case_input), ("sources", case_sources), ("privacy", case_privacy),
         ("sighup", case_sighup), ("http", case_http), ("cardinality", case_cardinality),
         ("flood", case_flood), ("restart", case_restart)]

if __name__ == "__main__":
    failed = False
    for name, fn in CASES:
        if ONLY and name not in ONLY:
            continue
        print(f"== {name}", flush=True)
        t0 = time.monotonic()
        try:
            fn()
        except Exception as e:  # report and go on, so one run shows every failure
            failed = True
            print(f"  FAIL: {name}: {e!r}", flush=True)
        finally:
            Procs.stop_all()
        print(f"  ({time.monotonic() - t0:.1f} s)", flush=True)
    print("FAIL" if failed else "PASS")
    if failed:
        print(WORK.log_tails())
    WORK.finish(not failed)
    sys.exit(1 if failed else 0)
