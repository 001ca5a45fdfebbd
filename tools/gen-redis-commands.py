#!/usr/bin/python3
"""Writes daemon/input/parsers/redis_commands.inc, the RESP parser's command table, from a real server.

The table is data: one entry per Redis command and subcommand ("object|encoding") with its
arity and its key specifications exactly as `COMMAND` (the full form of `COMMAND INFO`)
reports them. Redis 7.0 puts the key specs in COMMAND INFO's 9th field; COMMAND DOCS
describes the arguments (tests/daemon/input/parsers/command_table_test.py uses it to build example
argument vectors). See https://redis.io/docs/reference/key-specs/.

Usage (python3-redis; Debian's /usr/bin/python3):
  tools/gen-redis-commands.py [--server /usr/bin/redis-server] [-o daemon/input/parsers/redis_commands.inc]
It starts its own redis-server on a free loopback port and stops it at the end. Rerun it
when the supported server version changes and commit the result.

Four commands have specs Redis itself does not use to find keys (an `unknown` spec, an
INCOMPLETE or VARIABLE_FLAGS flag): Redis calls the command's own getkeys function then,
and so does the parser (daemon/input/parsers/resp.cc). Those functions are listed in PROCS; the script
fails if the server reports such a spec for a command it does not list, so a new server
version cannot slip one past.
"""

import argparse
import os
import socket
import subprocess
import sys
import shutil
import tempfile
import time

import redis

# Commands whose keys Redis finds with a getkeys function, and the parser's equivalent.
PROCS = {
    "sort": "kSort",  # sortGetKeys: key 1 (RO) and the last STORE's key (OW)
    "sort_ro": "kSortRo",  # sortROGetKeys: key 1 (RO); BY/GET patterns are not keys
    "migrate": "kMigrate",  # migrateGetKeys: key 3, or every argument after KEYS
    "bitfield": "kBitfield",  # bitfieldGetKeys: RO when every operation is GET
}
# VARIABLE_FLAGS specs whose every outcome is a write: Redis's function only picks RW or OW.
HARMLESS_VARIABLE = {"set"}

ACCESS = {"RO": "kRead", "RW": "kWrite", "OW": "kWrite", "RM": "kWrite"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary):
    """Starts redis-server on a free port; returns (process, port)."""
    for _ in range(20):
        port = free_port()
        workdir = tempfile.mkdtemp(prefix="gen-redis-commands.")
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


def raw_command(port, *args):
    """The server's reply as nested lists of bytes and ints, without redis-py's parsing."""
    conn = redis.Redis(port=port).connection_pool.get_connection("COMMAND")
    conn.send_command(*args)
    return conn.read_response()


def text(x):
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [text(i) for i in x]
    return x


def pairs(flat):
    return dict(zip(flat[::2], flat[1::2]))


def flatten(commands):
    """Every command and subcommand as (name, info), sorted by name."""
    out = []
    for c in commands:
        out.append((c[0].lower(), c))
        for sub in (c[9] if len(c) > 9 else []):
            out.append((sub[0].lower(), sub))
    out.sort(key=lambda e: e[0].encode())
    return out


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def spec_entry(name, spec):
    """One KeySpec initializer, or None for a not_key spec (channels are not keys)."""
    flags = spec["flags"]
    if "not_key" in flags:
        return None
    access = [ACCESS[f] for f in flags if f in ACCESS]
    if len(access) != 1:
        sys.exit(f"{name}: expected one of RO/RW/OW/RM in {flags}")
    bs = pairs(spec["begin_search"])
    fk = pairs(spec["find_keys"])
    bs_spec, fk_spec = pairs(bs["spec"]), pairs(fk["spec"])
    if bs["type"] == "index":
        begin = f"BeginSearch::kIndex, {bs_spec['index']}, {{}}"
    elif bs["type"] == "keyword":
        begin = f"BeginSearch::kKeyword, {bs_spec['startfrom']}, {c_string(bs_spec['keyword'])}"
    else:
        begin = "BeginSearch::kUnknown, 0, {}"
    if fk["type"] == "range":
        find = (f"FindKeys::kRange, {fk_spec['lastkey']}, {fk_spec['keystep']}, "
                f"{fk_spec['limit']}")
    elif fk["type"] == "keynum":
        find = (f"FindKeys::kKeynum, {fk_spec['keynumidx']}, {fk_spec['firstkey']}, "
                f"{fk_spec['keystep']}")
    else:
        find = "FindKeys::kUnknown, 0, 0, 0"
    return f"{{Access::{access[0]}, {begin}, {find}}}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="/usr/bin/redis-server")
    ap.add_argument("-o", "--output",
                    default=os.path.join(os.path.dirname(__file__), "..", "parsers",
                                         "redis_commands.inc"))
    args = ap.parse_args()

    proc, port = start_server(args.server)
    try:
        version = text(pairs(text(raw_command(port, "HELLO", "2"))).get("version", "?"))
        commands = text(raw_command(port, "COMMAND"))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(proc.workdir, ignore_errors=True)

    lines = []
    max_specs = 0
    for name, c in flatten(commands):
        arity = c[1]
        specs = [pairs(s) for s in c[8]]
        special = [s for s in specs
                   if pairs(s["begin_search"])["type"] == "unknown"
                   or pairs(s["find_keys"])["type"] == "unknown"
                   or "incomplete" in s["flags"] or "variable_flags" in s["flags"]]
        proc_name = PROCS.get(name, "kNone")
        if special and name not in PROCS and name not in HARMLESS_VARIABLE:
            sys.exit(f"{name}: a spec Redis resolves with a getkeys function; add it to PROCS")
        entries = [e for e in (spec_entry(name, s) for s in specs) if e is not None]
        max_specs = max(max_specs, len(entries))
        has_subcommands = "true" if len(c) > 9 and c[9] else "false"
        lines.append(f"{{{c_string(name)}, {arity}, {has_subcommands}, KeyFinder::{proc_name}, "
                     f"{len(entries)}, {{{', '.join(entries)}}}}},")

    with open(args.output, "w") as f:
        f.write(f"// Generated by tools/gen-redis-commands.py from redis-server {version}'s COMMAND\n"
                "// reply: every command and subcommand, sorted by name, with its arity and key\n"
                "// specs (not_key specs left out). Data, not code: regenerate, do not edit.\n"
                "// Fields: name, arity, has_subcommands, key finder, spec count, specs; a spec is\n"
                "// {access, begin_search type, index or startfrom, keyword, find_keys type,\n"
                "//  lastkey/keynumidx, keystep/firstkey, limit/keystep}.\n"
                "// Included inside the initializer of resp.cc's kCommands[].\n"
                "// clang-format off\n")
        f.write("\n".join(lines) + "\n// clang-format on\n")
        if max_specs > 3:
            sys.exit(f"a command has {max_specs} key specs; raise kMaxSpecs in daemon/input/parsers/resp.cc")
    print(f"{len(lines)} commands from redis-server {version} -> {args.output}")


if __name__ == "__main__":
    main()
