#!/usr/bin/env python3
"""feed_bench.py: what hot-key feed subscribers cost a hotkeyd --demo.

For each subscriber count, REPEATS runs: start hotkeyd --demo (UDP off, 1 s rate window),
let it settle SETTLE seconds, open the subscribers (each a thread reading the stream to its
end), then measure over WINDOW seconds the daemon's CPU (utime + stime from
/proc/<pid>/stat, scaled to CPU-seconds per minute), its RSS at the end (VmRSS), and the
events the subscribers received (per second, over all subscribers). Prints one JSON line
per run and a summary: median, min and max per count. Not a test: figures for
docs/benchmarks/feed.md.

With CHURN=1 in the environment, a thread also rewrites the rules file every 250 ms, its
40 pinned 100-byte keys replaced by 40 others, and reloads it (POST /-/reload): 80 events
a tick, for the feed's cost under a stream of events rather than heartbeats alone.

Usage: [CHURN=1] feed_bench.py HOTKEYD [COUNTS=0,16,64] [REPEATS=3] [WINDOW=20]
"""

import http.client
import json
import os
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "lib"))
from hotkeyd_e2e import Hotkeyd, Procs, Workdir  # noqa: E402

SETTLE = 5


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def subscriber(port, counter, stop):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /api/v1/hotkeys/stream HTTP/1.1\r\nHost: x\r\n\r\n")
    s.settimeout(0.5)
    buf = b""
    while not stop.is_set():
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            break
        buf += chunk
        n = buf.count(b"\n\n")
        if n:
            counter[0] += n
            buf = buf[buf.rfind(b"\n\n") + 2:]
    s.close()


def pins(round_no, count=40):
    lines = ["feed:", "  pin:"]
    for i in range(count):
        lines += [f"    - key: \"{'p' * 100}{round_no % 2}-{i}\"", "      mode: cache"]
    return "\n".join(lines) + "\n"


def churn(port, rules, stop):
    round_no = 0
    while not stop.is_set():
        round_no += 1
        with open(rules, "w") as f:
            f.write(pins(round_no))
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("POST", "/-/reload")
        c.getresponse().read()
        c.close()
        time.sleep(0.25)


def run(binary, work, n, window):
    rules = work.file("rules.yml")
    with open(rules, "w") as f:
        f.write(pins(0))
    d = Hotkeyd(binary, "--demo", "--track.rate-window=1s", "--udp.listen-address=",
                f"--feed.max-subscribers={max(n, 1)}", f"--config.file={rules}",
                "--web.enable-lifecycle", work=work)
    time.sleep(SETTLE)
    stop = threading.Event()
    counters = [[0] for _ in range(n)]
    threads = [threading.Thread(target=subscriber, args=(d.web, c, stop), daemon=True)
               for c in counters]
    if os.environ.get("CHURN") == "1":
        threads.append(threading.Thread(target=churn, args=(d.web, rules, stop), daemon=True))
    for t in threads:
        t.start()
    time.sleep(1)
    events0 = sum(c[0] for c in counters)
    cpu0, t0 = cpu_seconds(d.proc.pid), time.monotonic()
    time.sleep(window)
    cpu1, t1 = cpu_seconds(d.proc.pid), time.monotonic()
    events1 = sum(c[0] for c in counters)
    rss = rss_kib(d.proc.pid)
    stop.set()
    d.stop()
    return {"subscribers": n, "cpu_s_per_min": (cpu1 - cpu0) * 60 / (t1 - t0), "rss_kib": rss,
            "events_per_s": (events1 - events0) / (t1 - t0)}


def main():
    binary = sys.argv[1]
    counts = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "0,16,64").split(",")]
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    window = float(sys.argv[4]) if len(sys.argv) > 4 else 20
    work = Workdir("feed-bench")
    results = {n: [] for n in counts}
    try:
        for _ in range(repeats):
            for n in counts:  # interleaved, so drift on the host hits every count alike
                r = run(binary, work, n, window)
                print(json.dumps(r), flush=True)
                results[n].append(r)
    finally:
        Procs.stop_all()
        work.finish(True)
    for n in counts:
        for key in ("cpu_s_per_min", "rss_kib", "events_per_s"):
            v = [r[key] for r in results[n]]
            print(f"subscribers={n} {key}: median {statistics.median(v):.3f} "
                  f"min {min(v):.3f} max {max(v):.3f}")


if __name__ == "__main__":
    main()
