"""cpu_quota.py: a cgroup with a CPU quota for a test's server process, removed on close.

  with CpuQuota("hotkeyd-test", cpus=0.05) as q:   # raises Unavailable with the reason
      q.add(pid)

Uses the cgroup v1 `cpu` controller where it is mounted (cpu.cfs_quota_us), else cgroup v2
with the cpu controller (cpu.max), as the daemon's quota reader finds them. On another host:
`systemd-run --scope -p CPUQuota=5% redis-server ...` does the same. Needs root.
"""

import os
import time


class Unavailable(Exception):
    """No cgroup could be made here; the message says why."""


def _cpu_mount():
    """(kind, path) of the cgroup hierarchy with the cpu controller, or None."""
    v2 = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            point, fstype, options = fields[4], rfields[0], rfields[-1]
            if fstype == "cgroup" and "cpu" in options.split(","):
                return "v1", point
            if fstype == "cgroup2" and v2 is None:
                v2 = point
    if v2 and "cpu" in open(os.path.join(v2, "cgroup.controllers")).read().split():
        return "v2", v2
    return None


class CpuQuota:
    PERIOD_US = 100_000   # the kernel's default period
    MIN_QUOTA_US = 1000   # the kernel's smallest quota

    def __init__(self, name, cpus):
        """A quota of `cpus` CPUs; below 1% of one the period grows so the quota stays at
        the kernel's minimum of 1 ms (`self.cpus` is the quota set)."""
        mount = _cpu_mount()
        if mount is None:
            raise Unavailable("no cgroup hierarchy with the cpu controller is mounted")
        self.kind, root = mount
        self.root = root
        self.path = os.path.join(root, f"{name}-{os.getpid()}")
        try:
            if self.kind == "v2":
                with open(os.path.join(root, "cgroup.subtree_control"), "w") as f:
                    f.write("+cpu")
            os.mkdir(self.path)
            self.set(cpus)
        except OSError as e:
            raise Unavailable(f"cannot make a cgroup under {root} ({e}): not root, or "
                              "the hierarchy is read-only") from e
        self.pids = []

    def set(self, cpus):
        """Changes the quota to `cpus` CPUs, as the constructor sets it."""
        period = max(self.PERIOD_US, int(self.MIN_QUOTA_US / cpus))
        quota = max(self.MIN_QUOTA_US, int(cpus * period))
        if self.kind == "v1":
            # The quota first: a period shorter than the old one's quota allows is refused.
            self._write("cpu.cfs_quota_us", -1)
            self._write("cpu.cfs_period_us", period)
            self._write("cpu.cfs_quota_us", quota)
        else:
            self._write("cpu.max", f"{quota} {period}")
        self.cpus = quota / period

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def add(self, pid):
        self._write("cgroup.procs", pid)
        self.pids.append(pid)

    def close(self):
        for pid in self.pids:  # back to the root, so the directory can go
            try:
                with open(os.path.join(self.root, "cgroup.procs"), "w") as f:
                    f.write(str(pid))
            except OSError:
                pass  # it exited
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
