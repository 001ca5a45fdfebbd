#!/usr/bin/env python3
"""peers.py: the helpers of bench/peers.sh (see there). Subcommands:

  zipf KEYS OPS S SEED OUT_RESP OUT_TRUTH
      draws OPS key indexes from a Zipf(S) law over KEYS keys (rank r has weight 1/r^S;
      ranks are shuffled onto key:0..key:KEYS-1 with SEED), writes them as RESP GET commands
      to OUT_RESP (for `redis-cli --pipe`) and the exact counts of the top 100 keys to
      OUT_TRUTH (JSON), and the stream itself to OUT_RESP.keys (one index per line)
  send-udp KEYS_FILE HOST PORT
      sends the stream as `r key:N` lines in datagrams of at most 1400 bytes
  send-distinct N HOST PORT
      sends `r distinct:0` .. `r distinct:N-1`, each once, in datagrams of 1400 bytes
  hotkeys-compare TRUTH HOTKEYS_OUTPUT K
      how many of the true top K keys `redis-cli --hotkeys` listed, and the counters it gave
  hotkeyd-compare TRUTH TOP_JSON K
      the same for hotkeyd's /api/v1/top
  statsd-send N HOST PORT
      one DogStatsD counter per key: `hotkey_ops:1|c|#key:distinct:I`, N distinct keys
"""

import bisect
import json
import random
import re
import socket
import sys


def zipf(keys, ops, s, seed, out_resp, out_truth):
    rnd = random.Random(seed)
    cum, total = [], 0.0
    for r in range(1, keys + 1):
        total += 1.0 / r**s
        cum.append(total)
    perm = list(range(keys))
    rnd.shuffle(perm)
    counts = {}
    with open(out_resp, "wb") as resp, open(out_resp + ".keys", "w") as kf:
        buf, kbuf = [], []
        for _ in range(ops):
            rank = bisect.bisect_left(cum, rnd.random() * total)
            k = perm[min(rank, keys - 1)]
            counts[k] = counts.get(k, 0) + 1
            name = b"key:%d" % k
            buf.append(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(name), name))
            kbuf.append("%d\n" % k)
            if len(buf) >= 10000:
                resp.write(b"".join(buf))
                kf.write("".join(kbuf))
                buf, kbuf = [], []
        resp.write(b"".join(buf))
        kf.write("".join(kbuf))
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:100]
    with open(out_truth, "w") as f:
        json.dump({"ops": ops, "keys": keys, "zipf": s, "distinct_seen": len(counts),
                   "top": [["key:%d" % k, c] for k, c in top]}, f)


def send_lines(lines, host, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    buf, size, sent = [], 0, 0
    for ln in lines:
        if size + len(ln) + 1 > 1400:
            sock.sendto(b"\n".join(buf), (host, port))
            sent += 1
            buf, size = [], 0
        buf.append(ln)
        size += len(ln) + 1
    if buf:
        sock.sendto(b"\n".join(buf), (host, port))
        sent += 1
    return sent


def send_udp(keys_file, host, port):
    with open(keys_file) as f:
        lines = [b"r key:" + ln.strip().encode() for ln in f]
    n = send_lines(lines, host, int(port))
    print(json.dumps({"events": len(lines), "datagrams": n}))


def send_distinct(n, host, port):
    lines = [b"r distinct:%d" % i for i in range(int(n))]
    d = send_lines(lines, host, int(port))
    print(json.dumps({"events": len(lines), "datagrams": d}))


def statsd_send(n, host, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    lines = [b"hotkey_ops:1|c|#key:distinct:%d" % i for i in range(int(n))]
    buf, size = [], 0
    for ln in lines:
        if size + len(ln) + 1 > 1400:
            sock.sendto(b"\n".join(buf), (host, int(port)))
            buf, size = [], 0
        buf.append(ln)
        size += len(ln) + 1
    if buf:
        sock.sendto(b"\n".join(buf), (host, int(port)))


def compare(truth_file, found, k):
    with open(truth_file) as f:
        truth = json.load(f)
    true_top = [name for name, _ in truth["top"][:k]]
    hits = sum(1 for name in found[:k] if name in true_top)
    return {"true_top": k, "listed": len(found[:k]), "of_true_top_found": hits,
            "true_top_counts": [c for _, c in truth["top"][:k]]}


def hotkeys_compare(truth_file, output_file, k):
    k = int(k)
    found, counters = [], []
    with open(output_file, errors="replace") as f:
        for line in f:
            m = re.search(r"hot key found with counter: (\d+)\s+keyname: (\S+)", line)
            if m:
                counters.append(int(m.group(1)))
                found.append(m.group(2).strip('"'))
    r = compare(truth_file, found, k)
    r["lfu_counters"] = counters[:k]
    r["distinct_counters"] = len(set(counters[:k]))
    print(json.dumps(r))


def hotkeyd_compare(truth_file, top_file, k):
    k = int(k)
    with open(top_file) as f:
        top = json.load(f)
    keys = sorted(top["keys"], key=lambda e: -e["share"])
    found = [e["key"] for e in keys]
    r = compare(truth_file, found, k)
    with open(truth_file) as f:
        truth = json.load(f)
    exact = dict(truth["top"])
    errors = [abs(e["share"] * truth["ops"] - exact[e["key"]]) / exact[e["key"]]
              for e in keys[:k] if e["key"] in exact]
    r["max_relative_error_of_count"] = max(errors) if errors else None
    print(json.dumps(r))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "zipf":
        zipf(int(args[0]), int(args[1]), float(args[2]), int(args[3]), args[4], args[5])
    elif cmd == "send-udp":
        send_udp(*args)
    elif cmd == "send-distinct":
        send_distinct(*args)
    elif cmd == "statsd-send":
        statsd_send(*args)
    elif cmd == "hotkeys-compare":
        hotkeys_compare(*args)
    elif cmd == "hotkeyd-compare":
        hotkeyd_compare(*args)
    else:
        sys.exit(f"peers.py: unknown subcommand {cmd}")
