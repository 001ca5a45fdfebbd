"""hotkeyd_e2e.py: what hotkeyd's Python end-to-end tests share.

Every Python test that runs the real binary (tests/hardening, tests/daemon/input/tap, tests/docs,
tests/e2e) starts, polls, scrapes and stops it through this module, so each does so the
same way: free loopback ports, a log file per process, a bounded wait for /-/ready that
fails with the log when the daemon exits, and polling with a deadline instead of fixed
sleeps.

Provided here:
  log, check          a line of output; an assertion that prints what it checked
  free_port, free_udp_port   a loopback port that was free a moment ago
  wait_until          polls a condition until it holds or a deadline passes (AssertionError
                      naming what was awaited and the last value seen)
  settle              polls a value until it stops changing for a quiet spell
  Procs               every process started; stop_all() (also at exit, SIGTERM and SIGINT)
                      ends each one, SIGTERM then SIGKILL after 5 s
  Workdir             a scratch directory, removed on success, kept and named on failure
  parse_metrics, metric_value   samples of a Prometheus text page
  Hotkeyd             a real hotkeyd on free loopback ports: /metrics, /api/v1/*, UDP send
  run_cases           runs named cases, reports each failure (with the daemons' log tails)
                      and exits non-zero on any

Import it from a test with
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import hotkeyd_e2e as e2e

No wait here is unbounded, and no fixed sleep stands in for a condition: where a test paces
a load on purpose, it sleeps itself and says why. hotkeyd_e2e_test.py pins these promises.
"""

import atexit
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

KEEP = os.environ.get("E2E_KEEP") == "1"
# Under a sanitizer RSS holds shadow memory and quarantine: memory bounds are checked only
# in the plain build (tools/ci-hardening.sh sets this).
SANITIZED = bool(os.environ.get("HOTKEY_SANITIZER"))
MIB = 1 << 20


def log(msg):
    print(msg, flush=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    log(f"  ok: {what}")


def free_port(kind=socket.SOCK_STREAM):
    """A loopback port of `kind` that was free a moment ago (the kernel hands out ephemeral
    ports, 32768 and up here, so never 6379 or 11211)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_udp_port():
    return free_port(socket.SOCK_DGRAM)


def wait_until(pred, timeout, what, interval=0.05, ignore=()):
    """Polls pred() until it returns a true value, and returns that value. After `timeout`
    seconds raises AssertionError naming `what` and the last value (or the last exception of
    a type in `ignore`, which count as "not yet"). Other exceptions from pred() propagate at
    once, and so does an AssertionError whatever `ignore` says, so a predicate can fail fast
    (a daemon that exited)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = pred()
            if last:
                return last
        except ignore as e:
            if isinstance(e, AssertionError):
                raise
            last = e
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def settle(read, timeout=30, quiet=0.5, interval=0.05):
    """Polls read() (a comparable value) until it has not changed for `quiet` seconds, and
    returns it: the counts have caught up with traffic that has stopped. `quiet` must be
    several publish intervals. Raises when the value keeps moving for `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last, since = read(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(interval)
        now = read()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
    raise AssertionError(f"still changing after {timeout} s: {last!r}")


class Procs:
    """Every process a test starts. stop_all() runs at exit, so a failing (or interrupted)
    test leaves nothing running."""
    procs = []

    @classmethod
    def start(cls, argv, log_path, **kw):
        """Starts argv with stdout and stderr appended to log_path."""
        with open(log_path, "ab") as f:
            p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, **kw)
        cls.procs.append(p)
        return p

    @classmethod
    def stop(cls, p, sig=signal.SIGTERM):
        if p.poll() is None:
            try:
                p.send_signal(sig)
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            except ProcessLookupError:
                pass
        if p in cls.procs:
            cls.procs.remove(p)

    @classmethod
    def kill(cls, p):
        """SIGKILL: no shutdown work (a crash, as far as the process can tell)."""
        if p.poll() is None:
            p.kill()
        p.wait()
        if p in cls.procs:
            cls.procs.remove(p)

    @classmethod
    def stop_all(cls):
        for p in list(reversed(cls.procs)):
            cls.stop(p)


atexit.register(Procs.stop_all)


def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)  # unwinds through the finally blocks, then atexit


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


class Workdir:
    """The test's scratch directory: removed on success unless E2E_KEEP=1, kept (and
    named) on failure."""

    def __init__(self, name):
        self.path = tempfile.mkdtemp(prefix=f"hotkeyd-{name}-")

    def file(self, name):
        return os.path.join(self.path, name)

    def log_tails(self, lines=20):
        """The last lines of every hotkeyd log in the directory, for a failure report."""
        out = []
        for path in sorted(glob.glob(self.file("hotkeyd-*.log"))):
            with open(path, errors="replace") as f:
                tail = f.readlines()[-lines:]
            out.append(f"---- {os.path.basename(path)} (last {len(tail)} lines)\n" + "".join(tail))
        return "".join(out)

    def finish(self, ok):
        if ok and not KEEP:
            shutil.rmtree(self.path, ignore_errors=True)
        else:
            log(f"logs kept in {self.path}")


# ------------------------------------------------------------------------------ metrics

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """[(name, {label: value}, float)] for every sample of a Prometheus text page. Label
    values are as escaped on the page."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m:
            out.append((m.group(1), dict(_LABEL.findall(m.group(3) or "")), float(m.group(4))))
    return out


def metric_value(text, name, labels=None):
    """The value of the sample `name` whose labels include `labels` ({} or None: any), or
    None if the page has no such sample."""
    for n, ls, v in parse_metrics(text):
        if n == name and all(ls.get(k) == x for k, x in (labels or {}).items()):
            return v
    return None


# ------------------------------------------------------------------------------ hotkeyd

# Flags that keep this process's user, put before a test's own (the last --run-as wins):
# started as root, hotkeyd otherwise switches to an unprivileged user, who cannot read the
# root-only workdir. tests/hardening/privilege_drop_e2e.py tests the switch itself.
KEEP_USER = ["--run-as=root"] if os.geteuid() == 0 else []


class Hotkeyd:
    """A real hotkeyd on free loopback web and UDP ports, given `flags` after those two,
    its stdout and stderr in `log_path` (default: hotkeyd-<web port>.log in `work`, a
    Workdir or a directory path). The constructor returns once /-/ready answers 200, and
    raises with the log's tail if the daemon exits first or is not ready in
    `ready_timeout` seconds."""

    def __init__(self, binary, *flags, work, log_path=None, ready_timeout=15, keep_user=True):
        self.binary = binary
        self.web = free_port()
        self.udp = free_udp_port()
        work_path = work.path if isinstance(work, Workdir) else work
        self.log_path = log_path or os.path.join(work_path, f"hotkeyd-{self.web}.log")
        self.flags = [f"--web.listen-address=127.0.0.1:{self.web}",
                      f"--udp.listen-address=127.0.0.1:{self.udp}",
                      *(KEEP_USER if keep_user else []), *flags]
        self.proc = Procs.start([binary, *self.flags], self.log_path)
        wait_until(self._ready, ready_timeout, f"hotkeyd /-/ready on port {self.web}")

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"hotkeyd exited at start (rc {self.proc.returncode}): "
                                 f"{self.log_tail()}")
        try:
            return self.get("/-/ready", timeout=1)[0] == 200
        except OSError:
            return False

    def url(self, path):
        return f"http://127.0.0.1:{self.web}{path}"

    def get(self, path, timeout=5):
        """(status, body bytes); an HTTP error status is returned, not raised."""
        try:
            with urllib.request.urlopen(self.url(path), timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def get_ok(self, path, timeout=5):
        status, body = self.get(path, timeout)
        assert status == 200, f"{path} answered {status}: {body[:200]!r}"
        return body

    def metrics_text(self):
        return self.get_ok("/metrics").decode("utf-8")  # raises if the page is not UTF-8

    def metric(self, name, labels=None):
        """The sample's value now (see metric_value), or None."""
        return metric_value(self.metrics_text(), name, labels)

    def api(self, path):
        """The JSON of /api/v1/<path>."""
        return json.loads(self.get_ok(f"/api/v1/{path}"))

    def top_raw(self):
        return self.get_ok("/api/v1/top")

    def top(self):
        return json.loads(self.top_raw())

    def wait_top(self, pred, what, timeout=10):
        """Polls /api/v1/top until pred(top) holds; returns that top."""
        return wait_until(lambda: (lambda t: t if pred(t) else None)(self.top()), timeout, what)

    def wait_top_field(self, field, want, timeout=10):
        """Polls /api/v1/top until its counter `field` reaches `want`; returns that top."""
        return self.wait_top(lambda t: t[field] >= want, f"{field} >= {want}", timeout)

    def settled_top_field(self, field, timeout=30, quiet=0.5):
        """The counter `field` of /api/v1/top once it stops moving."""
        return settle(lambda: self.top()[field], timeout=timeout, quiet=quiet)

    def send(self, *datagrams, src=("127.0.0.1", 0)):
        """Sends each datagram to the daemon's UDP port from one socket bound to `src`."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(src)
            for d in datagrams:
                s.sendto(d, ("127.0.0.1", self.udp))

    def alive(self):
        """Still running, and still answering /-/healthy and /metrics."""
        if self.proc.poll() is not None:
            return False
        try:
            return self.get("/-/healthy")[0] == 200 and self.get("/metrics")[0] == 200
        except OSError:
            return False

    def rss(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) * 1024

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read()

    def log_tail(self, chars=3000):
        return self.logs().decode(errors="replace")[-chars:]

    def stop(self):
        Procs.stop(self.proc)

    def kill(self):
        Procs.kill(self.proc)


# ------------------------------------------------------------------------------ runner

def run_cases(name, cases, argv):
    """Runs the cases named in argv (all when none), each to its end, and exits 1 if any
    failed. Each case is a function(work) that raises on failure; it stops what it starts
    in its own finally blocks, and Procs stops whatever is left between cases. A failure
    prints the tails of the hotkeyd logs and keeps the workdir."""
    only = set(argv)
    unknown = only - {n for n, _ in cases}
    if unknown:
        sys.exit(f"unknown case(s): {', '.join(sorted(unknown))}")
    work = Workdir(name)
    failed = []
    t_all = time.monotonic()
    try:
        for case, fn in cases:
            if only and case not in only:
                continue
            log(f"== {case}")
            t0 = time.monotonic()
            try:
                fn(work)
            except Exception as e:  # noqa: BLE001 (report and go on: one run shows every failure)
                failed.append(case)
                log(f"  FAIL: {case}: {e}")
            finally:
                Procs.stop_all()
            log(f"  ({time.monotonic() - t0:.1f} s)")
    finally:
        Procs.stop_all()
        if failed:
            log(work.log_tails())
        work.finish(not failed)
    log(f"{'FAIL: ' + ', '.join(failed) if failed else 'PASS'} ({time.monotonic() - t_all:.1f} s)")
    sys.exit(1 if failed else 0)
