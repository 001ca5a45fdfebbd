#!/usr/bin/env python3
"""escape_readers_test.py: a key holding any character a text reader takes for a line
break, a control or nothing at all reaches every output escaped.

Usage: escape_readers_test.py HOTKEYD_BIN

One key per code point text::Escape escapes (escape.h: C0 but the line feed, which ends a
line of the wire protocol, DEL, C1, U+00AD, U+061C, U+200B-U+200F, U+2028-U+202E,
U+2060-U+2064, U+2066-U+2069, U+FEFF), "cp:<hex>:a<character>b", is sent over UDP, each
equally often, so each is exported and hot. Then:
  - each key's label is "cp:<hex>:a" + \\xHH per byte of the character + "b", in /metrics
    and in /api/v1/top;
  - /metrics passes `promtool check metrics`, and prometheus_client's text parser where
    python3-prometheus-client is installed;
  - /metrics, /api/v1/top, /api/v1/history, /api/v1/hotkeys and the log (logfmt) hold no
    escaped character but the line feed that ends a line: Python's str.splitlines() finds
    exactly as many lines as there are line feeds.
Exits 77 (skipped) without promtool.
"""

import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import hotkeyd_e2e as e2e  # noqa: E402

# escape.h's list, by range; the line feed is the wire protocol's line end, not a key byte.
RANGES = [(0x00, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x61C, 0x61C), (0x200B, 0x200F),
          (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x2069), (0xFEFF, 0xFEFF)]
ESCAPED = {cp for lo, hi in RANGES for cp in range(lo, hi + 1)}
KEYS = {cp: f"cp:{cp:04x}:a{chr(cp)}b".encode() for cp in sorted(ESCAPED) if cp != 0x0A}
RULES = """export:
  top_k: 200
  min_share: 0.001
  min_key_ops: 0
alert:
  share_threshold: 0.005
  min_dwell: 0s
"""


def label(cp):
    return f"cp:{cp:04x}:a" + "".join(f"\\x{b:02x}" for b in chr(cp).encode()) + "b"


def check_lines(name, text):
    """No escaped character but the line feed, and splitlines() agrees with the line feeds."""
    bad = sorted({f"U+{ord(c):04X}" for c in text if ord(c) in ESCAPED and c != "\n"})
    lines = len(text.splitlines())
    feeds = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    e2e.log(f"  {name}: {len(text)} characters, {feeds} lines by line feed, {lines} by "
            f"splitlines(), raw escaped characters: {bad or 'none'}")
    assert not bad, f"{name} holds raw {bad}"
    assert lines == feeds, f"{name}: splitlines() reads {lines} lines, the line feeds {feeds}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if shutil.which("promtool") is None:
        print("escape_readers_test: SKIP: no promtool (tools/install-test-deps.sh)")
        sys.exit(77)
    work = e2e.Workdir("escape-readers")
    ok = False
    try:
        rules = work.file("rules.yml")
        with open(rules, "w") as f:
            f.write(RULES)
        d = e2e.Hotkeyd(sys.argv[1], f"--config.file={rules}", "--track.candidates=1024",
                        "--track.publish-interval=100ms", work=work)
        batch = b"\n".join(b"r " + k for k in KEYS.values())
        # The text format writes a label's backslash as \\.
        want = {'key="' + label(cp).replace("\\", "\\\\") + '"' for cp in KEYS}

        def exported():
            d.send(*([batch] * 20))
            page = d.metrics_text()
            return page if all(w in page for w in want) else None
        page = e2e.wait_until(exported, 30, f"all {len(KEYS)} keys exported", interval=0.2)
        e2e.log(f"  {len(KEYS)} keys exported, each with its escaped label")

        p = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 0, f"promtool check metrics: rc {p.returncode}: {p.stdout}{p.stderr}"
        e2e.log("  promtool check metrics: ok")
        try:
            from prometheus_client.parser import text_string_to_metric_families
        except ImportError:
            e2e.log("  prometheus_client: not installed, its parser not run")
        else:
            keys = {s.labels["key"] for f in text_string_to_metric_families(page)
                    for s in f.samples if f.name == "hotkey_key_share_ratio"}
            missing = {label(cp) for cp in KEYS} - keys
            assert not missing, f"prometheus_client's parser lacks {sorted(missing)[:5]}"
            e2e.log("  prometheus_client's parser: every label read back")

        top_raw = d.top_raw().decode("utf-8")
        top_labels = {k["key"] for k in json.loads(top_raw)["keys"]}
        missing = {label(cp) for cp in KEYS} - top_labels
        assert not missing, f"/api/v1/top lacks {sorted(missing)[:5]}"
        e2e.wait_until(lambda: "hot key episode started" in d.logs().decode(), 15,
                       "a hot key in the log")
        check_lines("/metrics", page)
        check_lines("/api/v1/top", top_raw)
        history = e2e.wait_until(
            lambda: (lambda h: h if "cp:" in h else None)(d.get_ok("/api/v1/history").decode()),
            30, "the keys in a closed history window", interval=0.5)
        check_lines("/api/v1/history", history)
        check_lines("/api/v1/hotkeys", d.get_ok("/api/v1/hotkeys").decode("utf-8"))
        check_lines("the log", d.logs().decode("utf-8"))
        ok = True
        print("PASS")
    finally:
        e2e.Procs.stop_all()
        work.finish(ok)


if __name__ == "__main__":
    main()
