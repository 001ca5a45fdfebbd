#!/usr/bin/env python3
"""check_log_lines.py FORMAT FILE [MSG ...]: every line of FILE is one valid log record.

FORMAT logfmt: each line must be strict logfmt in go-logfmt's dialect (the one log/log.h
writes): `key=value` pairs separated by one space; a key is bytes above ' ' other than '='
and '"'; a value is bare (no space, '=', '"' or control byte) or quoted, and a quoted value
holds no raw control character and only the escapes \\" \\\\ \\n \\r \\t \\uXXXX. This
parser is written independently of the daemon's, so the daemon cannot agree with itself
on a mistake. FORMAT json: each line must be one JSON object (json.loads) of strings.

Every record needs ts, level and msg. Each MSG must be the msg of at least one record.
Prints each record as JSON on stdout, one a line, for the caller to grep.
"""
import json
import re
import sys

ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t"}
KEY = re.compile(r'[^\x00-\x20="\x7f]+')
BARE = re.compile(r'[^\x00-\x20="\x7f]+')


def parse_logfmt(line):
    out, i = {}, 0
    while i < len(line):
        if out:
            if line[i] != " ":
                raise ValueError(f"expected one space at {i}")
            i += 1
        m = KEY.match(line, i)
        if not m:
            raise ValueError(f"expected a key at {i}")
        key, i = m.group(0), m.end()
        if i >= len(line) or line[i] != "=":
            raise ValueError(f"expected '=' after {key!r}")
        i += 1
        if i < len(line) and line[i] == '"':
            i += 1
            value = []
            while True:
                if i >= len(line):
                    raise ValueError(f"unclosed quote in {key!r}")
                c = line[i]
                if c == '"':
                    i += 1
                    break
                if ord(c) < 0x20 or c == "\x7f":
                    raise ValueError(f"raw control character in {key!r}")
                if c == "\\":
                    e = line[i + 1:i + 2]
                    if e in ESCAPES:
                        value.append(ESCAPES[e])
                        i += 2
                    elif e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", line[i + 2:i + 6]):
                        value.append(chr(int(line[i + 2:i + 6], 16)))
                        i += 6
                    else:
                        raise ValueError(f"bad escape in {key!r} at {i}")
                    continue
                value.append(c)
                i += 1
            value = "".join(value)
        else:
            m = BARE.match(line, i)
            if not m:
                raise ValueError(f"bad bare value for {key!r} at {i}")
            value, i = m.group(0), m.end()
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def main():
    fmt, path, msgs = sys.argv[1], sys.argv[2], sys.argv[3:]
    seen = set()
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")  # a byte that is not UTF-8 fails the check
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        sys.exit(f"{path}: no log lines")
    for n, line in enumerate(lines, 1):
        try:
            if fmt == "logfmt":
                rec = parse_logfmt(line)
            else:
                rec = json.loads(line)
                if not isinstance(rec, dict) or not all(isinstance(v, str) for v in rec.values()):
                    raise ValueError("not an object of strings")
        except ValueError as e:
            sys.exit(f"{path}:{n}: not {fmt} ({e}): {line!r}")
        for k in ("ts", "level", "msg"):
            if k not in rec:
                sys.exit(f"{path}:{n}: no {k}: {line!r}")
        seen.add(rec["msg"])
        print(json.dumps(rec))
    for m in msgs:
        if m not in seen:
            sys.exit(f"{path}: no record with msg {m!r} (have {sorted(seen)})")


if __name__ == "__main__":
    main()
