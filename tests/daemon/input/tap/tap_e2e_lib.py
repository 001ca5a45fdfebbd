"""tap_e2e_lib.py: what the tap's end-to-end tests share.

The tests (tap_redis_e2e.py, tap_memcached_e2e.py, tap_hostile_e2e.py) start real servers
(redis-server, memcached) on free loopback ports and a real hotkeyd tapping them with
libpcap on `lo`, drive the servers with real clients and compare what hotkeyd counted with
the truth: the client's own record of what it sent, and the server's own counters (Redis
INFO commandstats, memcached stats).

Provided here (beside what tests/lib/hotkeyd_e2e.py provides to every e2e test, re-exported
so a tap test imports from one place):
  require_capture()   exits 1 with a clear message unless the process may capture
                      (root or CAP_NET_RAW); CI runs as root, so this is a failure, not a skip
  RedisServer, Memcached   a real server on a free loopback port, stopped by Procs
  Hotkeyd             a real hotkeyd with the tap on; its /metrics, /api/v1/top and counters
  TapCounts           the tap's counters at one moment, with deltas between two moments
  check_shares, check_no_secret   what every tap test asserts of the exported keys

Every wait is bounded; everything started is stopped, on failure too.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "lib"))
from hotkeyd_e2e import (KEEP, MIB, SANITIZED, Procs, Workdir, check, free_port,  # noqa: E402,F401
                         free_udp_port, log, parse_metrics, run_cases, settle, wait_until)
from hotkeyd_e2e import Hotkeyd as _Hotkeyd  # noqa: E402

CAP_NET_RAW = 13


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
        sys.exit(f"FAIL: not installed: {', '.join(missing)} (tools/install-test-deps.sh installs them)")


# ------------------------------------------------------------------------------ servers

class RedisServer:
    """A real redis-server on a free loopback port: no persistence, its log in the workdir."""

    def __init__(self, work, *config, password=None, name="redis", host="127.0.0.1", port=None):
        """On `host` (a loopback address) and `port` (a free one when None): servers on
        one port and different 127.x addresses are what one tap of that port sees."""
        self.host = host
        self.port = port or free_port()
        self.password = password
        self.log_path = work.file(f"{name}-{host}-{self.port}.log")
        argv = ["redis-server", "--port", str(self.port), "--bind", host,
                "--save", "", "--appendonly", "no", "--dir", work.path,
                "--dbfilename", f"{name}-{host}-{self.port}.rdb", "--protected-mode", "no",
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
        return redis.Redis(host=self.host, port=self.port, password=self.password,
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

# The tap's counters in /metrics (its schema: daemon/input/tap/tap_counters.cc), by the field names of
# tap::TapCounters.
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


class Hotkeyd(_Hotkeyd):
    """A real hotkeyd tapping `port` (one server port: one hotkeyd per instance) on lo with
    `protocol`, with FAST_FLAGS and FAST_RULES, on free web and UDP ports, its log in the
    workdir. Fails at once (with the log) if it exits during start."""

    def __init__(self, binary, work, port, protocol, *flags, interface="lo", keep_user=True):
        self.rules_path = work.file(f"hotkeyd-rules-{free_port()}.yml")
        with open(self.rules_path, "w") as f:
            f.write(FAST_RULES)
        super().__init__(binary, f"--config.file={self.rules_path}",
                         f"--tap.interface={interface}",
                         f"--tap.port={int(port)}",
                         f"--tap.protocol={protocol}", *FAST_FLAGS, *flags, work=work,
                         keep_user=keep_user)

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
        def counted():
            delta = self.counts() - base
            return delta.commands >= commands or delta.drops()
        try:
            wait_until(counted, timeout, f"{commands} commands counted")
        except AssertionError:
            pass  # the caller's checks name the figures that fell short

    def wait_capturing(self, poke, timeout=15):
        """Calls poke() (which sends one request on the tapped port) until the tap counts a
        command: /-/ready may answer before the capture sees its first packet."""
        base = self.counts().commands

        def counted():
            return self.counts().commands > base

        def poked_and_seen():
            poke()
            try:  # a poke is counted within a few publish intervals once capture runs
                return wait_until(counted, 0.5, "the poke counted")
            except AssertionError:
                return False
        wait_until(poked_and_seen, timeout, "the tap to count its first command", interval=0)

    def keys(self, top=None):
        """{label: key entry} for the exported keys of /api/v1/top."""
        return {k["key"]: k for k in (top or self.top())["keys"]}


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
