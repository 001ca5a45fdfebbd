#!/usr/bin/env python3
"""readme_examples_test.py: runs the README's examples, and the docs pages', so the
documentation cannot rot.

Usage: readme_examples_test.py --readme README.md [--docs docs/PAGE.md ...] --hotkeyd BIN
                               [--work-dir DIR] [--repeat 20] [--list]

Every fenced code block of the README and of each page given with --docs is classified, and
the test fails on any block it cannot classify, so a new example cannot escape it silently:
  - `<!-- readme-test: skip (REASON) -->` on the line(s) before a block: not run (REASON
    must say why, e.g. it installs packages or needs a Redis);
  - `<!-- readme-test: run -->` before a sh/python block: run against a live hotkeyd
    (ports rewritten, see below); it must exit 0;
  - `<!-- readme-test: tap -->` before a sh block that is one `build/daemon/hotkeyd
    --tap.interface=... --tap.port=P` command: the command that runs until stopped, run
    as written beside a real redis-server (P rewritten to its port, the binary under test
    for build/daemon/hotkeyd, free loopback web and UDP ports added). As root: run as
    root, and as user nobody from a copy of the binary given `setcap cap_net_raw+ep`;
    each time the tap must count every key of the requests sent, and the shard must be
    asked (hotkey_shard_up 1). As any user: nobody with a copy without the capability
    must exit 1 naming CAP_NET_RAW. Without root the two runs are skipped, with the
    reason;
  - sh/bash blocks that send UDP (`nc -u`, `/dev/udp/`): every line they write must
    arrive. The truth is taken first by running the block with `nc` replaced by a shell
    function that appends its stdin to a file (and `/dev/udp/...` by that file): that is
    what the example means to send. Then the unmodified block runs --repeat times (20)
    against a fresh hotkeyd, and the daemon must count every one of those lines as an
    event, at least one datagram per nc call, and no rejection;
  - python blocks defining `on_access(op, key)`: the sampler is called 100,000 times for
    one key (random seeded); every datagram it sends and every line in them must be
    counted, with no rejection, and the shard's ops over the rate window must be the
    events scaled back by their sampling probability (each event counts as 1/P ops);
  - go blocks that `net.Dial("udp", ...)`: wrapped in a main (the Dial line before a loop
    of 100,000 accesses, the rest inside it), compiled with Debian's golang (installed by
    tools/install-test-deps.sh) and checked as the Python sampler is;
  - sh blocks that are a transcript (every command line starts with `$ `, the lines after
    it are its output): each command runs in the repository's root with the hotkeyd under
    test first in PATH (and for a leading build/daemon/hotkeyd), and its output (stdout
    and stderr) must be the lines shown;
  - yaml blocks must parse (python3-yaml);
  - untagged blocks are text (grammar, log lines, diagrams), unless a line starts with a
    command (`$ `, a program in PATH, or a path in the repository): then the block must
    carry a language tag and be classified as above.

Ports: the examples use the documented defaults (HTTP 10110, UDP 10111). The test never
uses those: each run picks free loopback ports (bind to port 0) and rewrites the documented
port numbers in the block's text before running it; a runnable block that does not name
the documented port fails, because it would talk to whatever listens elsewhere.

It also checks the README's first screen (all before the first `## ` heading): a paragraph
saying what hotkeyd is, a PNG screenshot under 200 KB that exists, the run command and then
the test command; that the README is at most 200 lines and has the install and tap
commands; and, when docs/benchmarks.md is among the pages, that it has a table with a row
for each peer (redis-cli --hotkeys, HOTKEYS, MONITOR, statsd_exporter) naming
bench/peers.sh.

Everything it starts is stopped on exit; every wait is bounded.
"""

import argparse
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import hotkeyd_e2e as e2e  # noqa: E402

HTTP_PORT = "10110"
UDP_PORT = "10111"
SHELL_LANGS = {"sh", "bash", "shell", "console"}
PYTHON_LANGS = {"python", "py", "python3"}
MARKER = re.compile(r"^\s*<!--\s*readme-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```\s*([A-Za-z0-9_+-]*)\s*$")
SAMPLER_CALLS = 100_000
WAIT_SECONDS = 15


def log(msg):
    print(f"[readme-examples {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Failure(Exception):
    pass


class Block:
    def __init__(self, page, line, lang, text, marker):
        self.page = page  # the file's path as given
        self.line = line  # 1-based line of the opening fence
        self.lang = lang
        self.text = text
        self.marker = marker  # the readme-test marker's text, or None

    def where(self):
        return f"{self.page}:{self.line} ({self.lang or 'untagged'})"


def parse_blocks(readme_text, page="README.md"):
    """Returns the fenced blocks of `page`, each with the readme-test marker on the
    non-blank line right before its opening fence (if any)."""
    blocks = []
    lines = readme_text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        marker = None
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            mm = MARKER.match(lines[j])
            if mm:
                marker = mm.group(1)
        body = []
        k = i + 1
        while k < len(lines) and not re.match(r"^\s*```\s*$", lines[k]):
            line = lines[k]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            k += 1
        if k == len(lines):
            raise Failure(f"{page}:{i + 1}: code block never closed")
        blocks.append(Block(page, i + 1, lang, "\n".join(body) + "\n", marker))
        i = k + 1
    return blocks


def looks_like_command(text, repo):
    for line in text.split("\n"):
        s = line.strip()
        if not s:
            continue
        if s.startswith("$ "):
            return True
        word = s.split()[0]
        if "/" in word and os.path.exists(os.path.join(repo, word)):
            return True
        if re.fullmatch(r"[A-Za-z0-9_.+-]+", word) and shutil.which(word):
            return True
    return False


def classify(block, repo):
    """Returns (kind, detail). kind is one of skip, run, udp-shell, sampler-python,
    sampler-go, yaml, text; raises Failure for a block that cannot be classified."""
    if block.marker is not None:
        m = re.fullmatch(r"skip\s*\((.+)\)", block.marker)
        if m and m.group(1).strip():
            return "skip", m.group(1).strip()
        if block.marker == "run" and (block.lang in SHELL_LANGS or block.lang in PYTHON_LANGS):
            return "run", None
        if block.marker == "tap" and block.lang in SHELL_LANGS:
            return "tap", None
        raise Failure(f"{block.where()}: unknown marker `readme-test: {block.marker}` "
                      "(use `skip (reason)`, `run` on a sh/python block or `tap` on a sh "
                      "block)")
    if block.lang in SHELL_LANGS:
        if re.search(r"\bnc\s+(-\w+\s+)*-u", block.text) or "/dev/udp/" in block.text:
            return "udp-shell", None
        if block.text.startswith("$ "):
            return "transcript", None
    elif block.lang in PYTHON_LANGS:
        if re.search(r"^def on_access\(", block.text, re.M):
            return "sampler-python", None
    elif block.lang == "go":
        if 'net.Dial("udp"' in block.text:
            return "sampler-go", None
    elif block.lang == "yaml":
        return "yaml", None
    elif block.lang in ("", "text"):
        if block.lang == "text" or not looks_like_command(block.text, repo):
            return "text", None
        raise Failure(f"{block.where()}: an untagged block that starts with a command: give it a "
                      "language tag (sh, python, go) and make it runnable here, or mark it "
                      "`<!-- readme-test: skip (reason) -->`")
    raise Failure(f"{block.where()}: cannot classify this example: make it one the test runs "
                  "(see tests/docs/readme_examples_test.py) or mark it "
                  "`<!-- readme-test: run -->` or `<!-- readme-test: skip (reason) -->`")


def rewrite_ports(block, text, http_port, udp_port, need_udp):
    if need_udp and not re.search(rf"\b{UDP_PORT}\b", text):
        raise Failure(f"{block.where()}: sends events but not to the documented UDP port "
                      f"{UDP_PORT}; the test cannot point it at its own daemon")
    text = re.sub(rf"\b{UDP_PORT}\b", str(udp_port), text)
    return re.sub(rf"\b{HTTP_PORT}\b", str(http_port), text)


class Daemon(e2e.Hotkeyd):
    """A hotkeyd on free loopback ports, its log hotkeyd-<name>.log in work_dir; stop()
    always ends it. Unless `as_written`, it keeps this process's user (e2e.KEEP_USER): started
    as root, the default would switch to an unprivileged user, who may not read the test's
    files."""

    def __init__(self, binary, work_dir, name, extra=(), as_written=False):
        try:
            super().__init__(binary, *extra, work=work_dir, keep_user=not as_written,
                             log_path=os.path.join(work_dir, f"hotkeyd-{name}.log"),
                             ready_timeout=WAIT_SECONDS)
        except AssertionError as e:
            raise Failure(f"{e}; see {self.log_path}") from None
        self.http_port, self.udp_port = self.web, self.udp

    def wait_events(self, want):
        """Polls /api/v1/top until events_received reaches `want` and then holds still for
        half a second (snapshots come every publish interval: a count past `want` shows
        too), or time is up; returns /api/v1/top then. The caller compares the counts."""
        try:
            self.wait_top_field("events_received", want, WAIT_SECONDS)
            self.settled_top_field("events_received", timeout=WAIT_SECONDS, quiet=0.5)
        except AssertionError:
            pass  # check_counts names the shortfall
        return self.top()


def rejections(top):
    return sum(top["events_rejected"].values()) + top["datagrams_denied"]


def check_counts(block, top, want_events, min_datagrams, what):
    got_e, got_d = top["events_received"], top["datagrams_received"]
    log(f"  {what}: {got_e} of {want_events} events counted, {got_d} datagrams "
        f"(at least {min_datagrams} sent), {rejections(top)} rejected, "
        f"{top['kernel_drops']} kernel drops")
    if got_e != want_events:
        raise Failure(f"{block.where()}: {what}: hotkeyd counted {got_e} events, the example "
                      f"sent {want_events}")
    if got_d < min_datagrams:
        raise Failure(f"{block.where()}: {what}: hotkeyd counted {got_d} datagrams, the example "
                      f"sent at least {min_datagrams}")
    if rejections(top):
        raise Failure(f"{block.where()}: {what}: hotkeyd rejected events: "
                      f"{top['events_rejected']}, denied {top['datagrams_denied']}")


CAPTURE_PRELUDE = r'''
nc() { printf 'x\n' >>"$README_TEST_CALLS"; cat >>"$README_TEST_CAPTURE"; }
'''


def run_shell(text, env, strict=True, timeout=60):
    """Runs `text` in bash; strict adds -e -o pipefail. The UDP examples run as a user's
    shell runs them (not strict): what they do is judged by what the daemon counts."""
    flags = ["-e", "-o", "pipefail"] if strict else []
    return subprocess.run(["bash", *flags, "-c", text], env=env, timeout=timeout,
                          capture_output=True, text=True)


def test_udp_shell(block, args):
    work = tempfile.mkdtemp(dir=args.work_dir, prefix="udp-shell-")
    capture, calls = os.path.join(work, "capture"), os.path.join(work, "calls")
    env = dict(os.environ, README_TEST_CAPTURE=capture, README_TEST_CALLS=calls)
    # The truth: what the block writes, with nc and /dev/udp replaced by a file.
    truth = re.sub(r">\s*/dev/udp/\S+", '>>"$README_TEST_CAPTURE"', block.text)
    truth = rewrite_ports(block, truth, 1, 1, need_udp=True)
    r = run_shell(CAPTURE_PRELUDE + truth, env)
    if r.returncode:
        raise Failure(f"{block.where()}: the block failed with nc replaced by a file: {r.stderr}")
    with open(capture, "rb") as f:
        lines = [ln for ln in f.read().split(b"\n") if ln and not ln.startswith(b"!")]
    with open(calls) if os.path.exists(calls) else open(os.devnull) as f:
        nc_calls = len(f.read().split())
    nc_calls += len(re.findall(r"/dev/udp/", block.text))
    log(f"  the block writes {len(lines)} event lines through {nc_calls} senders per run")
    if not lines:
        raise Failure(f"{block.where()}: the block sends nothing")
    d = Daemon(args.hotkeyd, args.work_dir, f"line{block.line}")
    try:
        script = rewrite_ports(block, block.text, d.http_port, d.udp_port, need_udp=True)
        for _ in range(args.repeat):
            r = run_shell(script, dict(os.environ), strict=False)
            if r.returncode:
                raise Failure(f"{block.where()}: the block failed (rc {r.returncode}): {r.stderr}")
        want = len(lines) * args.repeat
        check_counts(block, d.wait_events(want), want, nc_calls * args.repeat,
                     f"{args.repeat} runs")
    finally:
        d.stop()


def sampler_daemon_flags(work_dir):
    """The sampler examples' daemon: every key exported however few its ops (the rules
    file's export.min_key_ops: 0), rates over the daemon's whole life."""
    rules = os.path.join(work_dir, "sampler-rules.yml")
    with open(rules, "w") as f:
        f.write("export:\n  min_key_ops: 0\n")
    return ("--track.publish-interval=1s", "--track.rate-window=10m", f"--config.file={rules}")


def check_scaled_ops(block, top, events, rate):
    """Each event counts as 1/P ops: the shard's ops over the rate window (which covers the
    daemon's whole life here) are the events over their sampling probability."""
    ops = sum(top["ops_per_second"].values()) * top["rate_window_seconds"]
    want = events / rate
    log(f"  ops over the rate window: {ops:.1f}, events / {rate} = {want:.1f}")
    if abs(ops - want) > 1e-6 * want + 1e-6:
        raise Failure(f"{block.where()}: the daemon scaled {events} events at rate {rate} to "
                      f"{ops} ops, not {want}")


def test_sampler_python(block, args):
    d = Daemon(args.hotkeyd, args.work_dir, f"line{block.line}",
               sampler_daemon_flags(args.work_dir))
    try:
        src = rewrite_ports(block, block.text, d.http_port, d.udp_port, need_udp=True)
        ns = {"__name__": "readme_example"}
        exec(compile(src, block.where(), "exec"), ns)

        class CountingSocket:
            def __init__(self, real):
                self.real, self.datagrams, self.lines = real, 0, 0

            def sendto(self, data, addr):
                self.datagrams += 1
                self.lines += sum(1 for ln in data.split(b"\n") if ln and not ln.startswith(b"!"))
                return self.real.sendto(data, addr)

        sock = CountingSocket(ns["sock"])
        ns["sock"] = sock
        ns["random"].seed(20261201)
        for _ in range(SAMPLER_CALLS):
            ns["on_access"](b"r", b"user:42")
        log(f"  {SAMPLER_CALLS} accesses: {sock.lines} sampled events in {sock.datagrams} "
            "datagrams")
        if not sock.datagrams:
            raise Failure(f"{block.where()}: the sampler sent nothing in {SAMPLER_CALLS} calls")
        top = d.wait_events(sock.lines)
        check_counts(block, top, sock.lines, sock.datagrams, "the sampler")
        check_scaled_ops(block, top, sock.lines, sampling_rate(block))
    finally:
        d.stop()


def sampling_rate(block):
    m = re.search(r"rate=([0-9.e-]+)|r@([0-9.e-]+)", block.text)
    if not m:
        raise Failure(f"{block.where()}: no sampling rate (rate=P or r@P) in the example")
    return float(m.group(1) or m.group(2))


GO_MAIN = """package main

import (
	"fmt"
	"math/rand"
	"net"
	"os"
	"strconv"
)

var _ = fmt.Sprint
var _ = rand.Float64

type countingConn struct {
	net.Conn
	writes int
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes++
	return c.Conn.Write(b)
}

func main() {
	key := os.Args[1]
	n, _ := strconv.Atoi(os.Args[2])
	rand.Seed(20261201)
%(setup)s
	counted := &countingConn{Conn: conn}
	{
		conn := counted
		_ = conn
		for i := 0; i < n; i++ {
%(body)s
		}
	}
	fmt.Println(counted.writes)
}
"""


def test_sampler_go(block, args):
    go = shutil.which("go")
    if not go:
        raise Failure(f"{block.where()}: no `go` in PATH: tools/install-test-deps.sh installs Debian's "
                      "golang for this test")
    d = Daemon(args.hotkeyd, args.work_dir, f"line{block.line}",
               sampler_daemon_flags(args.work_dir))
    try:
        src = rewrite_ports(block, block.text, d.http_port, d.udp_port, need_udp=True)
        lines = src.rstrip("\n").split("\n")
        dial = next(i for i, ln in enumerate(lines) if 'net.Dial("udp"' in ln)
        work = tempfile.mkdtemp(dir=args.work_dir, prefix="go-")
        main_go = os.path.join(work, "main.go")
        with open(main_go, "w") as f:
            f.write(GO_MAIN % {
                "setup": "\n".join("\t" + ln for ln in lines[:dial + 1]),
                "body": "\n".join("\t\t\t" + ln for ln in lines[dial + 1:]),
            })
        env = dict(os.environ, GOCACHE=os.path.join(args.work_dir, "go-cache"), GO111MODULE="off",
                   GOFLAGS="", GOPATH=os.path.join(work, "gopath"))
        exe = os.path.join(work, "example")
        r = subprocess.run([go, "build", "-o", exe, main_go], env=env, capture_output=True,
                           text=True, timeout=300)
        if r.returncode:
            raise Failure(f"{block.where()}: does not compile (wrapped in {main_go}):\n{r.stderr}")
        r = subprocess.run([exe, "user:42", str(SAMPLER_CALLS)], capture_output=True, text=True,
                           timeout=60)
        if r.returncode:
            raise Failure(f"{block.where()}: exited {r.returncode}: {r.stderr}")
        sent = int(r.stdout.split()[-1])
        log(f"  {SAMPLER_CALLS} accesses: {sent} sampled events, one datagram each")
        if not sent:
            raise Failure(f"{block.where()}: the sampler sent nothing in {SAMPLER_CALLS} calls")
        top = d.wait_events(sent)
        check_counts(block, top, sent, sent, "the sampler")
        check_scaled_ops(block, top, sent, sampling_rate(block))
    finally:
        d.stop()


def test_run(block, args):
    d = Daemon(args.hotkeyd, args.work_dir, f"line{block.line}")
    try:
        src = rewrite_ports(block, block.text, d.http_port, d.udp_port, need_udp=False)
        if block.lang in PYTHON_LANGS:
            r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True,
                               timeout=60)
        else:
            r = run_shell(src, dict(os.environ))
        if r.returncode:
            raise Failure(f"{block.where()}: exited {r.returncode}: {r.stderr}")
    finally:
        d.stop()


DOC_BINARY = "build/daemon/hotkeyd"  # the binary as the docs name it: a clone's build
TAP_REQUESTS = 200
NOBODY = 65534


class Skip(Exception):
    pass


def tap_command(block):
    """The block's one command, as argv, checked for the shape the README promises."""
    lines = [ln for ln in block.text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) != 1:
        raise Failure(f"{block.where()}: a tap block is one command, not {len(lines)} lines")
    argv = lines[0].split("#", 1)[0].split()
    if argv[0] != DOC_BINARY or not any(a.startswith("--tap.interface=") for a in argv):
        raise Failure(f"{block.where()}: a tap block runs {DOC_BINARY} --tap.interface=...")
    ports = [a.split("=", 1)[1] for a in argv if a.startswith("--tap.port=")]
    if len(ports) != 1:
        raise Failure(f"{block.where()}: a tap block names one --tap.port=")
    return argv, ports[0]


def send_redis_gets(port, n, key=b"user:42"):
    """n GETs of `key` on one connection, each answered before the next."""
    cmd = b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        for _ in range(n):
            s.sendall(cmd)
            reply = s.recv(4096)
            if not reply.startswith((b"$", b"-")):
                raise Failure(f"redis-server answered {reply!r} to GET")


def tap_metric_sum(d, name):
    return sum(v for n, _, v in e2e.parse_metrics(d.metrics_text()) if n == name)


def run_tap_as(block, args, argv, redis_port, binary, who, redis_log):
    """Runs the block's command (binary for build/daemon/hotkeyd) and checks that the tap
    counts every key of TAP_REQUESTS GETs and that the shard answers."""
    flags = [a.replace(f"--tap.port={a.split('=', 1)[1]}", f"--tap.port={redis_port}")
             if a.startswith("--tap.port=") else a for a in argv[1:]]
    d = Daemon(binary, args.work_dir, f"line{block.line}-{who}", flags, as_written=True)
    try:
        send_redis_gets(redis_port, TAP_REQUESTS)
        try:
            e2e.wait_until(lambda: tap_metric_sum(d, "hotkey_tap_keys_total") >= TAP_REQUESTS,
                           WAIT_SECONDS, "the tap's key count")
            e2e.wait_until(lambda: d.metric("hotkey_shard_up") == 1, WAIT_SECONDS,
                           "hotkey_shard_up 1")
        except AssertionError as e:
            raise Failure(f"{block.where()}: as {who}: {e}; see {d.log_path}") from None
        keys = tap_metric_sum(d, "hotkey_tap_keys_total")
        log(f"  as {who}: the tap counted {keys:.0f} keys of {TAP_REQUESTS} GETs; the shard "
            "answered")
        if keys != TAP_REQUESTS:
            raise Failure(f"{block.where()}: as {who}: the tap counted {keys} keys, "
                          f"{TAP_REQUESTS} were sent")
    finally:
        d.stop()


def nobody_wrapper(work, binary):
    """A script that runs `binary` as user nobody (no groups), for Daemon."""
    path = os.path.join(work, f"as-nobody-{os.path.basename(binary)}")
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nexec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups '
                f'{binary} "$@"\n')
    os.chmod(path, 0o755)
    return path


def test_tap(block, args):
    argv, _ = tap_command(block)
    # A directory user nobody can enter, with two copies of the binary: one with the
    # capability, one without.
    work = tempfile.mkdtemp(prefix="hotkeyd-tap-")
    try:
        os.chmod(work, 0o755)
        plain = os.path.join(work, "hotkeyd-plain")
        shutil.copy(args.hotkeyd, plain)
        if os.geteuid() == 0:
            # Without the capability: a clear error, exit 1.
            r = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                                "--clear-groups", plain, *argv[1:],
                                "--web.listen-address=127.0.0.1:0", "--udp.listen-address="],
                               capture_output=True, text=True, timeout=30)
        else:
            r = subprocess.run([plain, *argv[1:], "--web.listen-address=127.0.0.1:0",
                                "--udp.listen-address="], capture_output=True, text=True,
                               timeout=30)
        if r.returncode != 1 or "CAP_NET_RAW" not in r.stderr:
            raise Failure(f"{block.where()}: without CAP_NET_RAW the command exited "
                          f"{r.returncode} with {r.stderr!r}, not 1 naming CAP_NET_RAW")
        log("  without the capability: exit 1, naming CAP_NET_RAW")
        if os.geteuid() != 0:
            raise Skip("not root: the runs as root and as a user with the capability need root "
                       "to set them up")
        capped = os.path.join(work, "hotkeyd")
        shutil.copy(args.hotkeyd, capped)
        r = subprocess.run(["setcap", "cap_net_raw+ep", capped], capture_output=True, text=True)
        if r.returncode:
            raise Failure(f"{block.where()}: setcap failed: {r.stderr}")
        redis_port = e2e.free_port()
        redis_log = os.path.join(args.work_dir, "redis-tap.log")
        redis = e2e.Procs.start(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                                 "--save", "", "--appendonly", "no", "--dir", work], redis_log)
        try:
            e2e.wait_until(lambda: socket.create_connection(("127.0.0.1", redis_port), 1).close()
                           or True, WAIT_SECONDS, "redis-server", ignore=(OSError,))
            run_tap_as(block, args, argv, redis_port, args.hotkeyd, "root", redis_log)
            run_tap_as(block, args, argv, redis_port, nobody_wrapper(work, capped),
                       "nobody with cap_net_raw+ep", redis_log)
        finally:
            e2e.Procs.stop(redis)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_transcript(block, args):
    """Runs each `$ command` and compares its output with the lines the README shows."""
    repo = os.path.dirname(os.path.abspath(args.readme))
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(args.hotkeyd)) + os.pathsep + env["PATH"]
    steps = []  # (command, expected output lines)
    for line in block.text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    for command, want in steps:
        if command.startswith(DOC_BINARY + " "):  # the binary under test, wherever it is built
            command = shlex.quote(os.path.abspath(args.hotkeyd)) + command[len(DOC_BINARY):]
        r = subprocess.run(["sh", "-c", command], cwd=repo, env=env, capture_output=True,
                           text=True, timeout=60)
        got = (r.stdout + r.stderr).splitlines()
        if got != want:
            raise Failure(f"{block.where()}: `{command}` printed {got!r}, the README shows {want!r}")


def test_yaml(block, _args):
    import yaml  # python3-yaml
    try:
        yaml.safe_load(block.text)
    except yaml.YAMLError as e:
        raise Failure(f"{block.where()}: does not parse as YAML: {e}")


FIRST_SCREEN_COMMANDS = [
    ("run", "build/daemon/hotkeyd --demo"),
    ("test", "tools/test.sh"),
]
README_COMMANDS = [
    ("install", "apt install ./build-deb/hotkeyd_*.deb"),
    ("tap", "build/daemon/hotkeyd --tap.interface="),
]
README_MAX_LINES = 200
PEERS = ["redis-cli --hotkeys", "HOTKEYS", "MONITOR", "statsd_exporter"]
SCREENSHOT_MAX_BYTES = 200_000


def without_comments(text):
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def check_first_screen(readme_text, repo):
    """The README's first screen (all before the first `## ` heading): what it is, a
    screenshot, the run command and then the test command; the README's length, and its
    install and tap commands. Returns the problems found."""
    problems = []
    head = readme_text.split("\n## ", 1)[0]
    paras = [p for p in head.split("\n\n")[1:] if p.strip()]
    if not paras or paras[0].lstrip().startswith(("!", "<", "`", "|")):
        problems.append("the first screen does not open with a paragraph saying what it is")
    images = re.findall(r"!\[[^\]]+\]\(([^)\s]+\.png)\)", head)
    if not images:
        problems.append("the first screen has no screenshot (![alt](docs/....png))")
    for img in images:
        path = os.path.join(repo, img)
        if not os.path.isfile(path):
            problems.append(f"screenshot {img} does not exist")
            continue
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(b"\x89PNG\r\n\x1a\n"):
            problems.append(f"screenshot {img} is not a PNG")
        if len(data) >= SCREENSHOT_MAX_BYTES:
            problems.append(f"screenshot {img} is {len(data)} bytes, not under {SCREENSHOT_MAX_BYTES}")
    pos = -1
    no_comments = without_comments(head)
    for name, cmd in FIRST_SCREEN_COMMANDS:
        at = no_comments.find(cmd)
        if at < 0:
            problems.append(f"the first screen lacks the {name} command `{cmd}`")
        elif at < pos:
            problems.append(f"the {name} command comes before the one above it")
        pos = max(pos, at)
    lines = readme_text.count("\n")
    if lines > README_MAX_LINES:
        problems.append(f"the README is {lines} lines, over {README_MAX_LINES}: move the rest "
                        "to docs/")
    for name, cmd in README_COMMANDS:
        if cmd not in without_comments(readme_text):
            problems.append(f"the README lacks the {name} command `{cmd}`")
    return problems


def check_peers_table(page_text):
    """The benchmarks page's table comparing hotkeyd with its peers, from bench/peers.sh."""
    problems = []
    table = [ln for ln in page_text.split("\n") if ln.startswith("|")]
    for peer in PEERS:
        if not any(peer in ln for ln in table):
            problems.append(f"the comparison table has no row for {peer}")
    if "bench/peers.sh" not in page_text:
        problems.append("the comparison does not name bench/peers.sh, its measurements")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--readme", required=True)
    ap.add_argument("--docs", nargs="*", default=[], help="more pages whose blocks are run")
    ap.add_argument("--hotkeyd", required=True)
    ap.add_argument("--work-dir")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--list", action="store_true", help="print each block's class and exit")
    args = ap.parse_args()
    repo = os.path.dirname(os.path.abspath(args.readme))
    own_tmp = None
    if not args.work_dir:
        args.work_dir = own_tmp = tempfile.mkdtemp(prefix="hotkeyd-readme-")
    os.makedirs(args.work_dir, exist_ok=True)
    blocks = []
    problems = []
    for page in [args.readme] + args.docs:
        with open(page, encoding="utf-8") as f:
            text = f.read()
        name = os.path.relpath(os.path.abspath(page), repo)
        blocks += parse_blocks(text, name)
        if page == args.readme:
            problems += check_first_screen(text, repo)
        if name == os.path.join("docs", "benchmarks.md"):
            problems += check_peers_table(text)
    runners = {"udp-shell": test_udp_shell, "sampler-python": test_sampler_python,
               "sampler-go": test_sampler_go, "run": test_run, "yaml": test_yaml,
               "transcript": test_transcript, "tap": test_tap}
    passed, failed, skipped = 0, 0, 0
    for p in problems:
        log(f"FAIL first screen: {p}")
    failed += bool(problems)
    passed += not problems
    if not problems:
        log("first screen: what it is, screenshot, run and test commands; the README's length, "
            "install and tap commands; the peers table (with docs/benchmarks.md)")
    for b in blocks:
        try:
            kind, detail = classify(b, repo)
            if kind == "skip":
                log(f"skip {b.where()}: {detail}")
                skipped += 1
                continue
            if kind == "text":
                continue
            log(f"{kind} {b.where()}: {b.text.strip().splitlines()[0][:70]}")
            if not args.list:
                runners[kind](b, args)
            passed += 1
        except Skip as e:
            log(f"skip {b.where()}: {e}")
            skipped += 1
        except (Failure, subprocess.TimeoutExpired) as e:
            log(f"FAIL {e}")
            failed += 1
        except Exception as e:  # an example that breaks the harness still fails one block
            log(f"FAIL {b.where()}: {type(e).__name__}: {e}")
            failed += 1
    if own_tmp and not failed:
        shutil.rmtree(own_tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
