"""tap_e2e_lib.py: what the tap's end-to-end tests share.

The tests (tap_redis_e2e.py, tap_memcached_e2e.py, tap_hostile_e2e.py) start real servers
(redis-server, memcached) on free loopback ports and a real hotkeyd tapping them with
libpcap on `lo`, drive the servers with real clients and compare what hotkeyd counted with
the truth: the client's own record of what it sent, and the server's own counters (Redis
INFO commandstats, memcached stats).

Provided here:
  require_capture()   exits 1 with a clear message unless the process may capture
                      (root or CAP_NET_RAW); CI runs as root, so this is a failure, not a skip
  Procs               every process started is registered; stop_all() (also at exit and on
                      SIGTERM/SIGINT) ends each one, SIGTERM then SIGKILL after 5 s
  RedisServer, Memcached   a real server on a free loopback port, stopped by Procs
  Hotkeyd             a real hotkeyd with the tap on; its /metrics, /api/v1/top and counters
  TapCounts           the tap's counters at one moment, with deltas between two moments
  wait_until, settle  polling with an overall deadline (no fixed sleep is an assertion)
  check, run_cases    assertions that print what they checked; a case runner that runs
                      every case, reports each failure and exits non-zero on any

Every wait is bounded; everything started is stopped, on failure too.
"""

import atexit
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

# Under a sanitizer RSS holds shadow memory and quarantine: memory bounds are checked only
# in the plain build (as tests/hardening/hostile_e2e.py does).
SANITIZED = bool(os.environ.get("HOTKEY_SANITIZER"))
KEEP = os.environ.get("E2E_KEEP") == "1"
CAP_NET_RAW = 13
MIB = 1 << 20


def log(msg):
    print(msg, flush=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    log(f"  ok: {what}")


def require_capture(name):
    """Capture on `lo` needs CAP_NET_RAW (root has it). Without it every case would fail
    at hotkeyd's start; say so once, clearly, and fail: CI runs as root, and a skip there
    would hide a broken capture."""
    with open("/proc/self/status") as f:
        cap_eff = int(re.search(r"^CapEff:\s+([0-9a-f]+)$", f.read(), re.M).group(1), 16)
    if not cap_eff & (1 << CAP_NET_RAW):
        sys.exit(f"{name}: FAIL: capturing on lo needs CAP_NET_RAW (run as root, or "
                 f"setcap cap_net_raw+ep on python3 and hotkeyd); uid {os.geteuid()} has "
                 f"CapEff {cap_eff:#x}")


def require_programs(*names):
    missing = [n for n in names if not shutil.which(n)]
    if missing:
        sys.exit(f"FAIL: not installed: {', '.join(missing)} (tools/install-deps.sh installs them)")


def free_port():
    """A loopback TCP port that was free a moment ago (never 6379 or 11211: the kernel
    hands out ephemeral ports, 32768 and up here)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(pred, timeout, what, interval=0.05):
    """Polls pred() until it returns a true value (returned) or `timeout` seconds pass
    (AssertionError naming `what` and the last value)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last:
            return last
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
    raise AssertionError(f"counts still moving after {timeout} s: {last!r}")


class Procs:
    """Every process a test starts. stop_all() runs at exit, so a failing (or interrupted)
    test leaves nothing running."""
    procs = []

    @classmethod
    def start(cls, argv, log_path, **kw):
        f = open(log_path, "ab")
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             **kw)
        f.close()
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

    def finish(self, ok):
        if ok and not KEEP:
            shutil.rmtree(self.path, ignore_errors=True)
        else:
            log(f"logs kept in {self.path}")


# ------------------------------------------------------------------------------ servers

class RedisServer:
    """A real redis-server on a free loopback port: no persistence, its log in the workdir."""

    def __init__(self, work, *config, password=None, name="redis"):
        self.port = free_port()
        self.password = password
        self.log_path = work.file(f"{name}-{self.port}.log")
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", work.path,
                "--dbfilename", f"{name}-{self.port}.rdb", "--protected-mode", "no",
                "--loglevel", "warning", *config]
        if password:
            argv += ["--requirepass", password]
        self.proc = Procs.start(argv, self.log_path)
        wait_until(self._ready, 10, f"redis-server on port {self.port}")

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"redis-server exited: {open(self.log_path).read()[-2000:]}")
        try:
            return self.client().ping()
        except Exception:  # noqa: BLE001 (any connection error: not up yet)
            return False

    def client(self, **kw):
        import redis  # python3-redis (Debian): imported here so the message below is clear
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password,
                           socket_timeout=10, **kw)

    def commandstats(self, client=None):
        """{command: calls + rejected_calls} from INFO commandstats (subcommands as
        "config|get"). Rejected calls (wrong arity, NOAUTH) are requests on the wire too;
        unknown commands are in neither."""
        info = (client or self.client()).info("commandstats")
        out = {}
        for k, v in info.items():
            name = k[len("cmdstat_"):]
            out[name] = int(v["calls"]) + int(v.get("rejected_calls", 0))
        return out

    def stop(self):
        Procs.stop(self.proc)


class Memcached:
    """A real memcached on a free loopback port (TCP only, 64 MiB)."""

    def __init__(self, work, *flags):
        self.port = free_port()
        self.log_path = work.file(f"memcached-{self.port}.log")
        argv = ["memcached", "-l", "127.0.0.1", "-p", str(self.port), "-U", "0", "-m", "64",
                *flags]
        if os.geteuid() == 0:
            argv += ["-u", "root"]
        self.proc = Procs.start(argv, self.log_path)
        wait_until(self._ready, 10, f"memcached on port {self.port}")

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"memcached exited: {open(self.log_path).read()[-2000:]}")
        try:
            return bool(self.stats())
        except OSError:
            return False

    def stats(self):
        """`stats` over its own connection: {name: int} for the numeric fields."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(b"stats\r\n")
            buf = b""
            while not buf.endswith(b"END\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        out = {}
        for line in buf.decode().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "STAT":
                try:
                    out[parts[1]] = int(parts[2])
                except ValueError:
                    pass
        return out

    def stop(self):
        Procs.stop(self.proc)


# ------------------------------------------------------------------------------ hotkeyd

# Flags that make a test fast and its figures exact:
#  - a 50 ms publish interval: counts are visible within a tick;
#  - a 1 h half-life: over a test's few seconds the decayed shares are the shares of all
#    the traffic sent, so they compare with the client's whole record;
#  - a 10 min rate window and no min-key-ops gate: keys stay exported after the traffic
#    stops (a shard idle for a whole window exports no shares);
#  - a large sketch and table: the count-min error stays far below the 0.01 share target.
# The policy part (export and alert settings) is the rules file FAST_RULES, which
# Hotkeyd writes into its workdir.
FAST_FLAGS = ["--track.publish-interval=50ms", "--track.half-life=1h",
              "--track.rate-window=10m", "--track.candidates=256", "--track.sketch-bytes=1MiB"]
FAST_RULES = ("export:\n  min_key_ops: 0\n  min_share: 0.001\n  top_k: 100\n"
              "alert:\n  min_dwell: 0s\n")

# The tap's counters in /metrics (exporter/metrics.cc), by the field names of TapCounters.
TAP_METRICS = {
    "packets": ("hotkey_tap_packets_total", {}),
    "captured_bytes": ("hotkey_tap_captured_bytes_total", {}),
    "kernel_drops": ("hotkey_tap_capture_drops_total", {"where": "kernel"}),
    "interface_drops": ("hotkey_tap_capture_drops_total", {"where": "interface"}),
    "truncated": ("hotkey_tap_frames_skipped_total", {"reason": "truncated"}),
    "flows": ("hotkey_tap_flows", {}),
    "flows_opened": ("hotkey_tap_flows_opened_total", {}),
    "flows_closed": ("hotkey_tap_flows_ended_total", {"reason": "closed"}),
    "flows_evicted": ("hotkey_tap_flows_ended_total", {"reason": "evicted"}),
    "flows_expired": ("hotkey_tap_flows_ended_total", {"reason": "expired"}),
    "joined_midstream": ("hotkey_tap_flows_joined_midstream_total", {}),
    "gaps": ("hotkey_tap_gaps_total", {}),
    "resyncs": ("hotkey_tap_resyncs_total", {"direction": "request"}),
    "protocol_errors": ("hotkey_tap_protocol_errors_total", {"direction": "request"}),
    "unknown_commands": ("hotkey_tap_unknown_commands_total", {}),
    "keys_dropped": ("hotkey_tap_keys_dropped_total", {}),
    "excluded_requests": ("hotkey_tap_excluded_requests_total", {}),
    "memory_bytes": ("hotkey_tap_memory_bytes", {}),
    "memory_bound_bytes": ("hotkey_tap_memory_bound_bytes", {}),
    # Summed over protocols (a tap serves one); /api/v1/top's tap source has the same three.
    "commands": ("hotkey_tap_commands_total", {}),
    "read_keys": ("hotkey_tap_keys_total", {"access": "read"}),
    "write_keys": ("hotkey_tap_keys_total", {"access": "write"}),
}

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """[(name, {label: value}, float)] for every sample of a Prometheus text page."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m:
            out.append((m.group(1), dict(_LABEL.findall(m.group(3) or "")), float(m.group(4))))
    return out


class TapCounts:
    """The tap's counters at one moment (by TAP_METRICS); `a - b` gives deltas."""

    def __init__(self, values):
        self.v = values

    def __getattr__(self, name):
        v = self.__dict__["v"]
        if name in v:
            return v[name]
        raise AttributeError(name)

    def __sub__(self, other):
        return TapCounts({k: self.v.get(k, 0) - other.v.get(k, 0) for k in self.v})

    def __eq__(self, other):
        return isinstance(other, TapCounts) and self.v == other.v

    def drops(self):
        return self.v.get("kernel_drops", 0) + self.v.get("interface_drops", 0)

    def __repr__(self):
        return json.dumps({k: v for k, v in self.v.items() if v})


class Hotkeyd:
    """A real hotkeyd tapping `ports` on lo with `protocol`, on free web and UDP ports,
    its log in the workdir. Fails at once (with the log) if it exits during start."""

    def __init__(self, binary, work, ports, protocol, *flags, interface="lo"):
        self.binary = binary
        self.web = free_port()
        self.udp = free_udp_port()
        self.log_path = work.file(f"hotkeyd-{self.web}.log")
        if isinstance(ports, int):
            ports = [ports]
        rules = work.file(f"hotkeyd-{self.web}-rules.yml")
        with open(rules, "w") as f:
            f.write(FAST_RULES)
        self.flags = [f"--web.listen-address=127.0.0.1:{self.web}",
                      f"--config.file={rules}",
                      f"--udp.listen-address=127.0.0.1:{self.udp}",
                      f"--tap.interface={interface}",
                      f"--tap.port={','.join(str(p) for p in ports)}",
                      f"--tap.protocol={protocol}", *FAST_FLAGS, *flags]
        self.proc = Procs.start([binary, *self.flags], self.log_path)
        wait_until(self._ready, 15, "hotkeyd /-/ready")

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"hotkeyd exited at start (rc {self.proc.returncode}): "
                                 f"{self.logs().decode(errors='replace')[-3000:]}")
        try:
            return self.get("/-/ready", timeout=1)[0] == 200
        except OSError:
            return False

    def get(self, path, timeout=5):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web}{path}", timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def alive(self):
        """Still running, and still answering /-/healthy and /metrics."""
        if self.proc.poll() is not None:
            return False
        try:
            return self.get("/-/healthy")[0] == 200 and self.get("/metrics")[0] == 200
        except OSError:
            return False

    def metrics_text(self):
        status, body = self.get("/metrics")
        assert status == 200, f"/metrics answered {status}"
        return body.decode("utf-8")  # raises if the page is not valid UTF-8

    def top_raw(self):
        status, body = self.get("/api/v1/top")
        assert status == 200, f"/api/v1/top answered {status}"
        return body

    def top(self):
        return json.loads(self.top_raw())

    def tap_source(self, top=None):
        top = top or self.top()
        taps = [s for s in top.get("sources", []) if s.get("kind") == "tap"]
        assert taps, f"/api/v1/top shows no tap source: {top.get('sources')}"
        return taps[0]

    def counts(self):
        """TapCounts now, from /metrics (one read: the counters are of one snapshot)."""
        samples = parse_metrics(self.metrics_text())
        v = {}
        for field, (name, labels) in TAP_METRICS.items():
            v[field] = sum(val for n, ls, val in samples
                           if n == name and all(ls.get(k) == x for k, x in labels.items()))
        return TapCounts(v)

    def settled(self, timeout=30, quiet=0.5):
        """The counts once they stop moving (the traffic sent so far is all counted)."""
        return settle(self.counts, timeout=timeout, quiet=quiet)

    def wait_counted(self, base, commands, timeout=60):
        """Waits until the tap has counted `commands` more commands than in `base`, or
        reported a drop, for at most `timeout` seconds; the caller's checks then compare.
        A quiet spell alone (settled()) does not show that a tap slowed down (a sanitized
        build on a loaded machine) has drained its ring: a client sends faster than that."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            delta = self.counts() - base
            if delta.commands >= commands or delta.drops():
                return
            time.sleep(0.05)

    def wait_capturing(self, poke, timeout=15):
        """Calls poke() (which sends one request on the tapped port) until the tap counts a
        command: /-/ready may answer before the capture sees its first packet."""
        base = self.counts().commands

        def seen():
            poke()
            time.sleep(0.1)
            return self.counts().commands > base
        wait_until(seen, timeout, "the tap to count its first command", interval=0.1)

    def keys(self, top=None):
        """{label: key entry} for the exported keys of /api/v1/top."""
        return {k["key"]: k for k in (top or self.top())["keys"]}

    def rss(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) * 1024

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read()

    def stop(self):
        Procs.stop(self.proc)


def hotkeyd_has_tap(binary):
    """The build has the tap (the flag is in --help)."""
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
    return "--tap.interface" in out.stdout + out.stderr


# ------------------------------------------------------------------------------ truth

class Truth:
    """The client's own record: key touches by key and access, as the tap defines them."""

    def __init__(self):
        self.reads, self.writes = {}, {}
        self.commands = 0

    def read(self, *keys):
        for k in keys:
            self.reads[k] = self.reads.get(k, 0) + 1

    def write(self, *keys):
        for k in keys:
            self.writes[k] = self.writes.get(k, 0) + 1

    def total_reads(self):
        return sum(self.reads.values())

    def total_writes(self):
        return sum(self.writes.values())

    def total(self):
        return self.total_reads() + self.total_writes()

    def share(self, key):
        return (self.reads.get(key, 0) + self.writes.get(key, 0)) / max(1, self.total())

    def write_ratio(self, key=None):
        if key is None:
            return self.total_writes() / max(1, self.total())
        w, r = self.writes.get(key, 0), self.reads.get(key, 0)
        return w / max(1, w + r)

    def top_keys(self, min_share):
        keys = set(self.reads) | set(self.writes)
        return sorted((k for k in keys if self.share(k) >= min_share), key=self.share,
                      reverse=True)


def label_of(key):
    """The label hotkeyd gives a printable key with export.key_label raw (the default)."""
    return key.decode() if isinstance(key, bytes) else key


def check_shares(d, truth, min_share=0.02, tolerance=0.01, ratio_tolerance=0.03):
    """Every key the client sent at `min_share` or more is exported with its share within
    `tolerance` and its write ratio within `ratio_tolerance` of the client's record; no
    exported key has a share the client did not give it."""
    keys = d.keys()
    expect = truth.top_keys(min_share)
    check(expect, f"the client's record has keys over a share of {min_share}")
    for k in expect:
        label = label_of(k)
        check(label in keys, f"{label!r} (share {truth.share(k):.4f}) is exported")
        got = keys[label]
        check(abs(got["share"] - truth.share(k)) <= tolerance,
              f"{label!r}: share {got['share']:.4f} vs {truth.share(k):.4f} sent (±{tolerance})")
        check(abs(got["write_ratio"] - truth.write_ratio(k)) <= ratio_tolerance,
              f"{label!r}: write ratio {got['write_ratio']:.4f} vs {truth.write_ratio(k):.4f} "
              f"sent (±{ratio_tolerance})")
    sent = {label_of(k) for k in set(truth.reads) | set(truth.writes)}
    for label, got in keys.items():
        if got["share"] >= min_share:
            check(label in sent, f"exported {label!r} (share {got['share']:.4f}) was sent")
    return keys


def within(got, want, rel):
    return abs(got - want) <= rel * max(1, want)


def check_no_secret(d, secrets, extra_logs=()):
    """No secret's bytes appear in /metrics, /api/v1/top or hotkeyd's log."""
    places = [("/metrics", d.metrics_text().encode()), ("/api/v1/top", d.top_raw()),
              ("hotkeyd's log", d.logs())] + list(extra_logs)
    for secret in secrets:
        s = secret.encode() if isinstance(secret, str) else secret
        for where, blob in places:
            check(s not in blob, f"the secret {secret[:4]!r}... is not in {where}")


# ------------------------------------------------------------------------------ runner

def run_cases(name, cases, argv):
    """Runs the cases named in argv (all when none), each to its end, and exits 1 if any
    failed. Each case is a function(work) that raises on failure; it stops what it starts
    in its own finally blocks, and Procs stops whatever is left between cases."""
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
        work.finish(not failed)
    log(f"{'FAIL: ' + ', '.join(failed) if failed else 'PASS'} ({time.monotonic() - t_all:.1f} s)")
    sys.exit(1 if failed else 0)
