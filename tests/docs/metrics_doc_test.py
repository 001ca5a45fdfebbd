#!/usr/bin/env python3
"""metrics_doc_test.py: the metrics reference (docs/metrics.md) and what /metrics serves agree.

Usage: metrics_doc_test.py --doc docs/metrics.md --readme README.md [docs/PAGE.md ...]
                           --hotkeyd BIN --pcap tests/daemon/input/tap/testdata/redis_mix.pcap

Starts one hotkeyd with every optional family switched on: the demo load (hot keys, their
advice, slots and tags), the tap reading a recorded capture, a measured-loads file, a web
config file, a state file (--storage.path), and a real redis-server on a Unix socket to ask
for its load, made a one-node Redis Cluster (CLUSTER ADDSLOTSRANGE 0 16383) so that the
node's own families are served too; it scrapes /metrics once the capture is read, the demo
has hot keys, the shard has answered as a cluster node and the state was saved. Then one with
a bytes-weighted tap on the same capture (whose rate families replace the ops ones). Fails
when, over both pages:
  - a family served is not in the reference, or one in the reference is not served;
  - a family's type or label names differ from the reference's row (labels: where it has
    samples; hot tags, for one, are not in either page);
  - the README or another page given with --readme names a `hotkey_*` family that is not
    served (a stale name).

Everything it starts is stopped on exit; every wait is bounded.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import hotkeyd_e2e as e2e  # noqa: E402

ROW = re.compile(r"^\| `([a-z_:]+)` \| (\w+) \| ([^|]*) \|")


def documented(doc_text):
    """{name: (type, [labels])} from the reference's table rows."""
    out = {}
    for line in doc_text.splitlines():
        m = ROW.match(line)
        if m:
            labels = re.findall(r"`([a-z_]+)`", m.group(3))
            if m.group(1) in out:
                sys.exit(f"FAIL: {m.group(1)} has two rows in the reference")
            out[m.group(1)] = (m.group(2), labels)
    return out


def served(text):
    """{name: (type, [labels])} from the exposition's TYPE lines and samples."""
    out = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            out[name] = (kind, [])
        elif line and not line.startswith("#"):
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?", line)
            name = m.group(1)
            for suffix in ("_sum", "_count", "_bucket"):  # no summaries or histograms today
                if name not in out and name.endswith(suffix):
                    name = name[: -len(suffix)]
            labels = out[name][1]
            for label in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(2) or ""):
                if label not in labels:
                    labels.append(label)
    return out


def pcap_server_port(path):
    """The destination port of the capture's first frame (record.sh's probe SYN)."""
    with open(path, "rb") as f:
        data = f.read(24 + 16 + 14 + 20 + 4)
    off = 24 + 16 + 14 + 20 + 2
    return data[off] * 256 + data[off + 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc", required=True)
    ap.add_argument("--readme", required=True, nargs="+",
                    help="pages whose hotkey_* names must be served")
    ap.add_argument("--hotkeyd", required=True)
    ap.add_argument("--pcap", required=True)
    args = ap.parse_args()

    work = e2e.Workdir("metrics-doc")
    loads = work.file("loads.json")
    with open(loads, "w") as f:
        json.dump({"timestamp": time.time(), "ops_per_second": [100, 50]}, f)
    web_config = work.file("web.yml")
    open(web_config, "w").close()
    ok = False
    redis_sock = work.file("redis.sock")
    state = work.file("state")
    try:
        # Cluster mode needs a TCP port and a bus port; the daemon asks it on the socket.
        e2e.Procs.start(["redis-server", "--port", str(e2e.free_port()), "--bind", "127.0.0.1",
                         "--unixsocket", redis_sock, "--save", "", "--appendonly", "no",
                         "--dir", work.path, "--cluster-enabled", "yes",
                         "--cluster-config-file", "nodes.conf",
                         "--cluster-port", str(e2e.free_port())], work.file("redis.log"))
        e2e.wait_until(lambda: os.path.exists(redis_sock), 10, "redis-server's socket")
        subprocess.run(["redis-cli", "-s", redis_sock, "CLUSTER", "ADDSLOTSRANGE", "0", "16383"],
                       check=True, capture_output=True, timeout=10)
        e2e.wait_until(lambda: "cluster_state:ok" in subprocess.run(
            ["redis-cli", "-s", redis_sock, "CLUSTER", "INFO"], capture_output=True, text=True,
            timeout=10).stdout, 10, "the one-node cluster is ok")
        # e2e.Hotkeyd keeps this process's user (KEEP_USER): started as root, the default
        # (auto) would switch to an unprivileged user, who cannot read this test's files.
        d = e2e.Hotkeyd(args.hotkeyd, "--demo", f"--tap.file={args.pcap}",
                        f"--tap.port={pcap_server_port(args.pcap)}",
                        f"--model.measured-loads-file={loads}",
                        f"--shard.address={redis_sock}", "--shard.interval=1s",
                        f"--web.config.file={web_config}", f"--storage.path={state}",
                        "--storage.interval=1s", work=work, ready_timeout=30)

        def complete():
            text = d.metrics_text()
            return text if ("hotkey_tap_capture_file_done 1" in text and "hotkey_key_hot{" in text
                            and "hotkey_key_advice_info{" in text
                            and "hotkey_shard_cpu_busy_ratio" in text
                            and "hotkey_cluster_node_info{" in text
                            and os.path.exists(state)
                            and "hotkey_measured_loads_timestamp_seconds" in text) else None
        text = e2e.wait_until(complete, 30, "a /metrics page with the capture read, a hot key "
                              "advised, the shard's load, the cluster node, the state saved and "
                              "the measured loads", interval=0.1)
        b = e2e.Hotkeyd(args.hotkeyd, f"--tap.file={args.pcap}", "--tap.weight=bytes",
                        f"--tap.port={pcap_server_port(args.pcap)}", "--udp.listen-address=",
                        work=work, ready_timeout=30)
        text_bytes = e2e.wait_until(
            lambda: (lambda t: t if "hotkey_tap_capture_file_done 1" in t and
                     "hotkey_key_bytes_per_second{" in t else None)(b.metrics_text()),
            30, "a bytes-weighted /metrics page with the capture read", interval=0.1)
        ok = True
    except AssertionError as e:
        sys.exit(f"FAIL: {e}\n{work.log_tails()}")
    finally:
        e2e.Procs.stop_all()
        work.finish(ok)

    doc = documented(open(args.doc).read())
    got = served(text)
    for name, (kind, labels) in served(text_bytes).items():
        got.setdefault(name, (kind, labels))
    failures = []
    for name in sorted(set(got) - set(doc)):
        failures.append(f"{name} is served but not in {args.doc}")
    for name in sorted(set(doc) - set(got)):
        failures.append(f"{name} is in {args.doc} but not served")
    for name in sorted(set(doc) & set(got)):
        if doc[name][0] != got[name][0]:
            failures.append(f"{name}: type {got[name][0]} served, {doc[name][0]} documented")
        if got[name][1] and sorted(doc[name][1]) != sorted(got[name][1]):
            failures.append(f"{name}: labels {got[name][1]} served, {doc[name][1]} documented")
    for page in args.readme:
        # `hotkey_http_*` names a group, not a family.
        names = set(re.findall(r"(?<![\w:])(hotkey_[a-z_]*[a-z])(?![a-z_:*])", open(page).read()))
        for name in sorted(names - set(got)):
            failures.append(f"{page} names {name}, which is not served")
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print(f"PASS: {len(got)} families served, all documented, none stale")


if __name__ == "__main__":
    main()
