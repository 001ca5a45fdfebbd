#!/usr/bin/python3
"""The RESP parser's command table against a real redis-server.

Starts redis-server on a free loopback port, then checks, for every command and
subcommand the server knows:
  1. the spec data: the built-in table (resp_keys_tool table) has the command, its arity
     and each key spec as COMMAND reports it (begin_search, find_keys, and the read/write
     access from the RO/RW/OW/RM flags; not_key specs left out), and nothing else;
  2. the keys found: argument vectors built from COMMAND DOCS (required arguments only, and
     with every optional argument and each multiple argument given twice, for each
     alternative of a oneof) go to the server's COMMAND GETKEYSANDFLAGS and, as RESP, through
     the parser (resp_keys_tool keys); the keys and their read/write flag must agree for
     every vector the server accepts.
Exits non-zero with a report on any disagreement.
"""

import argparse
import json
import socket
import subprocess
import sys
import shutil
import tempfile
import time

import redis


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary):
    for _ in range(20):
        port = free_port()
        workdir = tempfile.mkdtemp(prefix="command_table_test.")
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", workdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                redis.Redis(port=port).ping()
                proc.workdir = workdir
                return proc, port
            except redis.exceptions.ConnectionError:
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
        proc.kill()
        proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit("could not start " + binary)


class Raw:
    """One connection whose replies come back unparsed (nested lists of bytes)."""

    def __init__(self, port):
        self.conn = redis.Redis(port=port).connection_pool.get_connection("x")

    def call(self, *args):
        self.conn.send_command(*args)
        return self.conn.read_response()


def text(x):
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [text(i) for i in x]
    return x


def pairs(flat):
    return dict(zip(flat[::2], flat[1::2]))


REPLICATION = {"psync", "sync", "replconf"}
ACCESS = {"RO": "read", "RW": "write", "OW": "write", "RM": "write"}


def access_of(flags):
    found = [ACCESS[f] for f in flags if f in ACCESS]
    return found[0] if len(found) == 1 else "?"


def server_commands(raw):
    out = {}
    for c in text(raw.call("COMMAND")):
        out[c[0].lower()] = c
        for sub in (c[9] if len(c) > 9 else []):
            out[sub[0].lower()] = sub
    return out


def expected_specs(info):
    specs = []
    for s in info[8]:
        s = pairs(s)
        if "not_key" in s["flags"]:
            continue
        bs, fk = pairs(s["begin_search"]), pairs(s["find_keys"])
        b = {"type": bs["type"]}
        b.update(pairs(bs["spec"]))
        f = {"type": fk["type"]}
        f.update(pairs(fk["spec"]))
        specs.append({"access": access_of(s["flags"]), "begin_search": b, "find_keys": f})
    return specs


def check_table(commands, table):
    errors = []
    by_name = {c["name"]: c for c in table}
    for name, info in sorted(commands.items()):
        t = by_name.get(name)
        if t is None:
            errors.append(f"{name}: missing from the table")
            continue
        if t["arity"] != info[1]:
            errors.append(f"{name}: arity {t['arity']}, server {info[1]}")
        if t["specs"] != expected_specs(info):
            errors.append(f"{name}: specs {t['specs']}, server {expected_specs(info)}")
        if t["has_subcommands"] != bool(len(info) > 9 and info[9]):
            errors.append(f"{name}: has_subcommands differs")
    for name in by_name:
        if name not in commands:
            errors.append(f"{name}: in the table, unknown to the server")
    return errors


# ---- argument vectors from COMMAND DOCS ---------------------------------------------------

# Vectors COMMAND DOCS does not produce but the parser must get right, like the server.
EXTRA = [
    ["SORT", "l", "BY", "w_*", "LIMIT", "0", "1", "GET", "#", "STORE", "d"],
    ["SORT", "l", "STORE", "a", "STORE", "b"],
    ["SORT", "l", "STORE", "limit", "0", "1"],
    ["SORT_RO", "l", "BY", "x", "GET", "y"],
    ["MIGRATE", "h", "1", "", "0", "5", "AUTH", "keys", "KEYS", "a", "b"],
    ["MIGRATE", "h", "1", "", "0", "5", "AUTH2", "u", "pw", "KEYS", "a"],
    ["MIGRATE", "h", "1", "k", "0", "5", "COPY", "REPLACE"],
    ["BITFIELD", "k", "GET", "u8", "0", "GET", "u4", "1"],
    ["BITFIELD", "k", "GET", "u8", "0", "INCRBY", "u8", "0", "1"],
    ["BITFIELD", "k", "OVERFLOW", "SAT", "GET", "u8", "0"],
    ["BITFIELD", "k"],
    ["XREAD", "COUNT", "1", "STREAMS", "a", "b", "c", "0", "0", "0"],
    ["XREAD", "STREAMS", "streams", "STREAMS", "0", "0"],
    ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", "0", "0"],
    ["EVAL", "s", "3", "a", "b", "c", "x"],
    ["EVAL", "s", "0"],
    ["FCALL", "f", "2", "a", "b"],
    ["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"],
    ["ZINTERCARD", "3", "a", "b", "c"],
    ["GEORADIUS", "g", "0", "0", "1", "km", "STORE", "a", "STOREDIST", "b"],
    ["SET", "k", "v", "GET"],
    ["MSET", "a", "1", "b", "2", "c", "3"],
    ["OBJECT", "ENCODING", "k"],
    ["MEMORY", "USAGE", "k", "SAMPLES", "5"],
    ["XINFO", "STREAM", "s", "FULL"],
    ["get", "MixedCase"],
]

VALUES = {"integer": "1", "double": "1.5", "string": "s", "pattern": "p*",
          "unix-time": "1700000000"}


class Builder:
    """Expands a COMMAND DOCS argument list into one argument vector."""

    def __init__(self, full, alt, reps):
        self.full, self.alt, self.reps = full, alt, reps
        self.keys = 0
        self.out = []
        self.numkeys_at = None

    def key(self):
        self.keys += 1
        return f"key{self.keys}"

    def value(self, arg):
        t = arg["type"]
        if t == "key":
            return [self.key()]
        if t == "pure-token":
            return [arg["token"]]
        if t == "oneof":
            subs = arg.get("arguments", [])
            return self.expand(subs[min(self.alt, len(subs) - 1)]) if subs else []
        if t == "block":
            out = []
            for sub in arg.get("arguments", []):
                out += self.expand(sub)
            return out
        return [VALUES.get(t, "s")]

    def expand(self, arg):
        flags = arg.get("flags", [])
        if "optional" in flags and not self.full:
            return []
        token = [arg["token"]] if "token" in arg and arg["type"] != "pure-token" else []
        count = self.reps if "multiple" in flags else 1
        out = []
        for i in range(count):
            if i == 0 or "multiple_token" in flags:
                out += token
            out += self.value(arg)
        return out

    def build(self, name, args):
        argv = name.upper().split("|")
        for a in args:
            piece = self.expand(a)
            # A key count: the number of keys of the multiple key argument after it.
            if a["type"] == "integer" and "numkeys" in a["name"]:
                self.numkeys_at = len(argv)
            argv += piece
        if self.numkeys_at is not None:
            argv[self.numkeys_at] = str(self.reps)
        return argv


def parse_doc(doc):
    """COMMAND DOCS' reply for one command as dicts, recursively."""
    d = pairs(doc)
    if "arguments" in d:
        d["arguments"] = [parse_arg(a) for a in d["arguments"]]
    if "subcommands" in d:
        subs = d["subcommands"]
        d["subcommands"] = {subs[i].lower(): parse_doc(subs[i + 1]) for i in range(0, len(subs), 2)}
    return d


def parse_arg(a):
    d = pairs(a)
    if "arguments" in d:
        d["arguments"] = [parse_arg(x) for x in d["arguments"]]
    return d


def all_docs(raw):
    reply = text(raw.call("COMMAND", "DOCS"))
    out = {}
    for i in range(0, len(reply), 2):
        d = parse_doc(reply[i + 1])
        out[reply[i].lower()] = d
        for sub, sd in d.get("subcommands", {}).items():
            out[sub] = sd
    return out


def vectors(name, doc):
    args = doc.get("arguments", [])
    seen, out = set(), []
    for full in (False, True):
        for alt in range(4):
            for reps in (1, 2):
                argv = Builder(full, alt, reps).build(name, args)
                if tuple(argv) not in seen:
                    seen.add(tuple(argv))
                    out.append(argv)
    return out


def resp(argv):
    s = f"*{len(argv)}\r\n"
    for a in argv:
        b = a.encode()
        s += f"${len(b)}\r\n{a}\r\n"
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--server", default="/usr/bin/redis-server")
    args = ap.parse_args()

    table = json.loads(subprocess.run([args.tool, "table"], check=True, capture_output=True,
                                      text=True).stdout)
    proc, port = start_server(args.server)
    try:
        raw = Raw(port)
        commands = server_commands(raw)
        errors = check_table(commands, table)
        docs = all_docs(raw)

        cases = []  # (argv, server's keys as a list of "r:hex"/"w:hex")
        no_vector = []
        for name in sorted(commands):
            info = commands[name]
            if len(info) > 9 and info[9]:
                continue  # a container: its subcommands are the commands
            formed = 0
            for argv in vectors(name, docs.get(name, {})):
                if len(argv) < 2:
                    cases.append((argv, []))  # no argument: no key (GETKEYS needs one)
                    formed += 1
                    continue
                try:
                    got = text(raw.call("COMMAND", "GETKEYSANDFLAGS", *argv))
                except redis.exceptions.ResponseError as e:
                    if "no key arguments" in str(e):
                        cases.append((argv, []))
                        formed += 1
                    continue  # the server rejects this vector (arity, syntax)
                keys = [("r:" if access_of(f) == "read" else "w:") + k.encode().hex()
                        for k, f in got]
                cases.append((argv, keys))
                formed += 1
            if formed == 0:
                no_vector.append(name)
        for argv in EXTRA:
            got = text(raw.call("COMMAND", "GETKEYSANDFLAGS", *argv))
            cases.append((argv, [("r:" if access_of(f) == "read" else "w:") + k.encode().hex()
                                 for k, f in got]))

        # A replication command ends what the parser reports on its flow (by design): each
        # one goes last in a batch of its own, and must report nothing.
        batches, batch = [], []
        for argv, want in cases:
            batch.append((argv, want))
            if argv[0].lower() in REPLICATION:
                batches.append(batch)
                batch = []
        batches.append(batch)
        for batch in batches:
            out = subprocess.run([args.tool, "keys"], input="".join(resp(a) for a, _ in batch),
                                 capture_output=True, text=True)
            lines = out.stdout.split("\n")[:-1]
            reported = [(a, w) for a, w in batch if a[0].lower() not in REPLICATION]
            if out.returncode != 0 or len(lines) != len(reported):
                errors.append(f"resp_keys_tool keys: rc {out.returncode}, {len(lines)} lines for "
                              f"{len(reported)} requests: {out.stderr.strip()}")
                continue
            for (argv, want), line in zip(reported, lines):
                got = line.split() if line else []
                if got != want:
                    errors.append(f"{' '.join(argv)}: parser {got}, server {want}")
        keyed = {n for n, c in commands.items() if expected_specs(c)}
        covered = {a[0].lower() if len(a) == 1 or a[0].lower() + "|" + a[1].lower() not in commands
                   else a[0].lower() + "|" + a[1].lower() for a, _ in cases}
        print(f"{len(commands)} commands checked against the table; {len(cases)} argument "
              f"vectors ({sum(1 for _, w in cases if w)} with keys) of {len(covered)} commands "
              f"checked against GETKEYSANDFLAGS; "
              f"{len(keyed - covered)} commands with keys had no vector the server accepted: "
              f"{sorted(keyed - covered)}")
        if len(keyed - covered) > len(keyed) // 10:
            errors.append("fewer than 90% of the commands with keys were checked on the server")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(proc.workdir, ignore_errors=True)

    for e in errors[:100]:
        print("FAIL", e)
    if errors:
        print(f"{len(errors)} disagreements")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
