#!/usr/bin/env python3
"""metrics_doc_test.py: the metrics reference (docs/metrics.md) and what /metrics serves agree.

Usage: metrics_doc_test.py --doc docs/metrics.md --readme README.md --hotkeyd BIN
                           --pcap tests/tap/testdata/redis_mix.pcap

Starts one hotkeyd with every optional family switched on (the demo load, the tap reading a
recorded capture, a measured-loads file and a web config file), scrapes /metrics once the
capture is read and the demo has hot keys, and fails when:
  - a family served is not in the reference, or one in the reference is not served;
  - a family's type or label names differ from the reference's row;
  - the README names a `hotkey_*` family that is not served (a stale name).

Everything it starts is stopped on exit; every wait is bounded.
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

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
    ap.add_argument("--readme", required=True)
    ap.add_argument("--hotkeyd", required=True)
    ap.add_argument("--pcap", required=True)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="metrics-doc-")
    loads = f"{work}/loads.json"
    with open(loads, "w") as f:
        json.dump({"timestamp": time.time(), "ops_per_second": [100, 50]}, f)
    web_config = f"{work}/web.yml"
    open(web_config, "w").close()
    log = open(f"{work}/log", "w+")
    proc = subprocess.Popen(
        [args.hotkeyd, "--demo", f"--tap.file={args.pcap}",
         f"--tap.port={pcap_server_port(args.pcap)}", "--web.listen-address=127.0.0.1:0",
         "--udp.listen-address=127.0.0.1:0", f"--model.measured-loads-file={loads}",
         f"--web.config.file={web_config}"],
        stderr=log)
    try:
        web = None
        text = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if web is None:
                log.seek(0)
                m = re.search(r"web=(\S+)", log.read())
                web = m.group(1) if m else None
            if web:
                try:
                    with urllib.request.urlopen(f"http://{web}/metrics", timeout=5) as r:
                        text = r.read().decode()
                except OSError:
                    text = ""
                if ("hotkey_tap_capture_file_done 1" in text and "hotkey_key_hot{" in text
                        and "hotkey_measured_loads_timestamp_seconds" in text):
                    break
            time.sleep(0.2)
        else:
            log.seek(0)
            sys.exit(f"FAIL: no complete /metrics within 30 s; log:\n{log.read()}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    doc = documented(open(args.doc).read())
    got = served(text)
    failures = []
    for name in sorted(set(got) - set(doc)):
        failures.append(f"{name} is served but not in {args.doc}")
    for name in sorted(set(doc) - set(got)):
        failures.append(f"{name} is in {args.doc} but not served")
    for name in sorted(set(doc) & set(got)):
        if doc[name][0] != got[name][0]:
            failures.append(f"{name}: type {got[name][0]} served, {doc[name][0]} documented")
        if sorted(doc[name][1]) != sorted(got[name][1]):
            failures.append(f"{name}: labels {got[name][1]} served, {doc[name][1]} documented")
    readme_names = set(re.findall(r"(?<![\w:])(hotkey_[a-z_]+)(?![a-z_:])", open(args.readme).read()))
    for name in sorted(readme_names - set(got)):
        failures.append(f"README.md names {name}, which is not served")
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print(f"PASS: {len(got)} families served, all documented, none stale")


if __name__ == "__main__":
    main()
