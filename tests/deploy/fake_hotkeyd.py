#!/usr/bin/env python3
"""A stand-in for hotkeyd, for testing prometheus_e2e.sh itself before the daemon exists.

NOT a reference implementation: shares are counted over a 2-second sliding window instead
of the daemon's exponential decay, there is no sketch, no advice model (every hot key is
advised "cache"), no config. It speaks enough of the interface for the end-to-end script:
the flags it passes (--web.listen-address, --udp.listen-address, others ignored), protocol
v1's `r|w <key>` lines and `!` headers, /-/ready, /-/healthy and /metrics with every metric
name from the shared list, label values made valid UTF-8 (U+FFFD for bad bytes).

Usage: fake_hotkeyd.py --web.listen-address=127.0.0.1:P --udp.listen-address=127.0.0.1:U
"""

import collections
import http.server
import os
import resource
import socket
import sys
import threading
import time

WINDOW = 2.0
THRESHOLD = 0.1
TOP_K = 10
MIN_SHARE = 0.01


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.events = collections.deque()  # (time, key bytes, op)
        self.counts = collections.Counter()
        self.datagrams = 0
        self.datagrams_rejected = collections.Counter()
        self.events_received = 0
        self.events_rejected = collections.Counter()

    def add(self, now, key, op):
        self.events.append((now, key, op))
        self.counts[(key, op)] += 1

    def expire(self, now):
        while self.events and self.events[0][0] < now - WINDOW:
            _, key, op = self.events.popleft()
            self.counts[(key, op)] -= 1
            if not self.counts[(key, op)]:
                del self.counts[(key, op)]


def receive(state, sock):
    while True:
        data, _ = sock.recvfrom(65536)
        now = time.monotonic()
        with state.lock:
            state.datagrams += 1
            lines = data.split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            if lines and lines[0].startswith(b"!"):
                if not lines[0].startswith(b"!v1"):
                    state.datagrams_rejected["bad_header"] += 1
                    continue
                lines = lines[1:]
            for line in lines:
                state.events_received += 1
                op, sep, key = line.partition(b" ")
                if not line:
                    state.events_rejected["empty_line"] += 1
                elif op[:1] not in (b"r", b"w"):
                    state.events_rejected["unknown_op"] += 1
                elif not sep or not key:
                    state.events_rejected["missing_key"] += 1
                else:
                    state.add(now, key, "read" if op[:1] == b"r" else "write")
            state.expire(now)


def label(value):
    text = value.decode("utf-8", errors="replace")
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(state):
    with state.lock:
        state.expire(time.monotonic())
        per_key = collections.defaultdict(lambda: {"read": 0, "write": 0})
        for (key, op), n in state.counts.items():
            per_key[key][op] += n
        total = sum(sum(v.values()) for v in per_key.values())
        top = sorted(per_key.items(), key=lambda kv: -sum(kv[1].values()))[:TOP_K]
        top = [(k, v) for k, v in top if total and sum(v.values()) / total >= MIN_SHARE]
        out = []

        def fam(name, kind, samples):
            out.append(f"# HELP {name} fake\n# TYPE {name} {kind}\n")
            for labels, value in samples:
                lbl = ",".join(f'{k}="{v}"' for k, v in labels)
                out.append(f"{name}{{{lbl}}} {value}\n" if lbl else f"{name} {value}\n")

        share = {k: sum(v.values()) / total for k, v in top}
        hot = [k for k in share if share[k] > THRESHOLD]
        fam("hotkey_key_share_ratio", "gauge", [([("key", label(k))], share[k]) for k in share])
        fam("hotkey_key_share_threshold_ratio", "gauge", [([("key", label(k))], THRESHOLD) for k in share])
        fam("hotkey_key_share_error_ratio", "gauge", [([("key", label(k))], 0.001) for k in share])
        fam("hotkey_key_write_ratio", "gauge", [([("key", label(k))], v["write"] / max(1, sum(v.values()))) for k, v in top])
        fam("hotkey_key_ops_per_second", "gauge",
            [([("key", label(k)), ("op", op)], v[op] / WINDOW) for k, v in top for op in ("read", "write")])
        fam("hotkey_key_hot", "gauge", [([("key", label(k)), ("strategy", "cache")], 1) for k in hot])
        fam("hotkey_key_projected_load_ratio", "gauge",
            [([("key", label(k)), ("strategy", s)], 0.5) for k in hot for s in ("none", "cache", "isolate")])
        fam("hotkey_hot_keys", "gauge", [([], len(hot))])
        ops = collections.Counter()
        for v in per_key.values():
            ops.update(v)
        fam("hotkey_ops_per_second", "gauge", [([("op", op)], ops[op] / WINDOW) for op in ("read", "write")])
        fam("hotkey_datagrams_received_total", "counter", [([], state.datagrams)])
        fam("hotkey_datagrams_rejected_total", "counter", [([("reason", r)], n) for r, n in state.datagrams_rejected.items()])
        fam("hotkey_events_received_total", "counter", [([], state.events_received)])
        fam("hotkey_events_rejected_total", "counter", [([("reason", r)], n) for r, n in state.events_rejected.items()])
        fam("hotkey_udp_kernel_drops_total", "counter", [([], 0)])
        fam("hotkey_tracked_keys", "gauge", [([], len(per_key))])
        fam("hotkey_sketch_bytes", "gauge", [([], 32768)])
        fam("hotkey_config_last_reload_successful", "gauge", [([], 1)])
        fam("hotkey_config_last_reload_success_timestamp_seconds", "gauge", [([], START)])
        fam("hotkey_build_info", "gauge", [([("version", "fake"), ("compiler", "python")], 1)])
        ru = resource.getrusage(resource.RUSAGE_SELF)
        fam("process_cpu_seconds_total", "counter", [([], ru.ru_utime + ru.ru_stime)])
        fam("process_resident_memory_bytes", "gauge", [([], ru.ru_maxrss * 1024)])
        fam("process_virtual_memory_bytes", "gauge", [([], ru.ru_maxrss * 4096)])
        fam("process_start_time_seconds", "gauge", [([], START)])
        fam("process_open_fds", "gauge", [([], len(os.listdir("/proc/self/fd")))])
        fam("process_max_fds", "gauge", [([], resource.getrlimit(resource.RLIMIT_NOFILE)[0])])
        return "".join(out).encode("utf-8")


START = time.time()


def main(argv):
    opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    web = opts.get("web.listen-address", ":10110")
    udp = opts.get("udp.listen-address", "127.0.0.1:10111")
    state = State()
    host, port = udp.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host or "0.0.0.0", int(port)))
    threading.Thread(target=receive, args=(state, sock), daemon=True).start()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/metrics":
                body, ctype = render(state), "text/plain; version=0.0.4; charset=utf-8"
            elif self.path in ("/-/ready", "/-/healthy"):
                body, ctype = b"OK\n", "text/plain"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    host, port = web.rsplit(":", 1)
    http.server.ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
