#!/usr/bin/python3
"""privilege_drop_e2e.py: hotkeyd started as root with the tap gives up root and every
capability once its capture is open, and the tap still counts exactly.

Cases (each starts a real redis-server on a free loopback port and a real hotkeyd as root
with --tap.interface=lo on its port):
  dropped         --run-as=<the hotkeyd user, or nobody when there is none>: by the time
                  /-/ready answers (well within a second of the start), every thread of
                  hotkeyd (/proc/<pid>/task/*/status) has four non-zero uids, CapPrm,
                  CapEff, CapAmb and CapBnd of 0 and NoNewPrivs 1; the log says so in one
                  line; N known commands sent with redis-py are counted exactly
                  (hotkey_tap_commands_total moves by N: the shard prober asks over a unix
                  socket, which the tap does not see); a SIGHUP reload re-reads the rules
                  file as that user and succeeds
  unreadable      the rules file is readable by root only: the start fails (exit 1) and
                  says which file and which user
  storage         --storage.path in a directory of the user's: the state writer's thread,
                  which exists before the switch, is unprivileged too, and the state file
                  saved at shutdown belongs to the user; a directory the user cannot write
                  fails the start, naming it
  keep_root       --run-as=root keeps uid 0 and says so in the log
  unknown_user    --run-as=<no such user> fails the start, naming the user
  default_no_user the issue's reproduction: `--tap.interface=lo --tap.port=<port>` and no
                  --run-as, on a machine without a hotkeyd user (skipped where there is
                  one): every thread runs as nobody with no capability, and the log says
                  so and gives the command that creates the hotkeyd user
  empty_run_as    --run-as= as root fails the start: only --run-as=root keeps root
  writable_file   a rules file the user owns, or in a directory the user may write, fails
                  the start before root reads it, naming the file and the user
  state_as_user   the state file is read after the switch: a root-only state file in the
                  user's directory cannot be read ("Permission denied" in the log, after
                  "privileges dropped"), where root would have parsed it

Exits 77 (skipped) when not run as root: only root can switch users.

Usage: privilege_drop_e2e.py HOTKEYD [CASE ...]
"""

import os
import pwd
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon", "input", "tap"))
from tap_e2e_lib import (FAST_FLAGS, FAST_RULES, Hotkeyd, Procs, RedisServer,  # noqa: E402
                         check, free_port, free_udp_port, hotkeyd_has_tap, log,
                         require_programs, run_cases, wait_until)

HOTKEYD = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
COMMANDS = 1000  # 500 SETs and 500 GETs of one key


def run_as_user():
    """The package's user when the machine has it, else nobody."""
    for name in ("hotkeyd", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
    sys.exit("FAIL: neither a hotkeyd nor a nobody user exists")


def open_to_all(work):
    """The workdir (mkdtemp: 0700) readable by the switched-to user, so its rules file is."""
    os.chmod(work.path, 0o755)


def start_redis(work):
    sock = work.file(f"redis-{free_port()}.sock")
    return RedisServer(work, "--unixsocket", sock, "--unixsocketperm", "777"), sock


def thread_status(pid):
    """{tid: {field: value}} for the Uid, CapPrm, CapEff, CapAmb, CapBnd and NoNewPrivs
    lines of every thread."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        fields = dict(re.findall(r"^(Name|Uid|CapPrm|CapEff|CapAmb|CapBnd|NoNewPrivs):\s+(.*)$",
                                 text, re.M))
        out[int(tid)] = fields
    return out


def describe(threads):
    return "; ".join(f"{t.get('Name')} uid {t['Uid'].split()} CapEff {t['CapEff']}"
                     for t in threads.values())


def case_dropped(work):
    user = run_as_user()
    open_to_all(work)
    r, sock = start_redis(work)
    t0 = time.monotonic()
    d = Hotkeyd(HOTKEYD, work, r.port, "redis", f"--run-as={user.pw_name}",
                f"--shard.address={sock}", "--tap.buffer-bytes=16MiB")
    threads = thread_status(d.proc.pid)
    ready_s = time.monotonic() - t0
    log(f"  ready after {ready_s:.2f} s; threads: {describe(threads)}")
    check(len(threads) >= 3, f"hotkeyd runs several threads (io, tap, udp): {len(threads)}")
    for tid, t in threads.items():
        uids = [int(u) for u in t["Uid"].split()]
        check(uids == [user.pw_uid] * 4, f"thread {tid} runs as uid {user.pw_uid}: {t['Uid']}")
        for cap in ("CapPrm", "CapEff", "CapAmb", "CapBnd"):
            check(int(t[cap], 16) == 0, f"thread {tid} {cap} is 0: {t[cap]}")
        check(t["NoNewPrivs"] == "1", f"thread {tid} has no_new_privs: {t['NoNewPrivs']}")
    with open(d.log_path) as f:
        lines = [ln for ln in f if "privileges dropped" in ln]
    check(len(lines) == 1, f"one 'privileges dropped' log line: {lines}")
    check(f"user={user.pw_name}" in lines[0] and f"uid={user.pw_uid}" in lines[0]
          and "capabilities=none" in lines[0], f"the line names user, uid, capabilities: "
          f"{lines[0]}")

    import redis  # python3-redis
    c = redis.Redis(host="127.0.0.1", port=r.port, socket_timeout=10)
    d.wait_capturing(c.ping)
    base = d.settled()
    for i in range(COMMANDS // 2):
        c.set("priv:key", i)
        c.get("priv:key")
    d.wait_counted(base, COMMANDS)
    delta = d.settled() - base
    check(not delta.drops(), f"no packet dropped: {delta}")
    check(delta.commands == COMMANDS,
          f"the tap counted exactly {COMMANDS} commands: {delta.commands}")
    check(delta.read_keys == COMMANDS // 2 and delta.write_keys == COMMANDS // 2,
          f"{COMMANDS // 2} reads and writes: {delta.read_keys}, {delta.write_keys}")
    log(f"  counted {delta.commands} of {COMMANDS} commands")

    stamp = "hotkey_config_last_reload_success_timestamp_seconds"
    before = d.metric(stamp)
    time.sleep(0.01)  # the stamp is the wall clock's: a reload now moves it
    os.kill(d.proc.pid, signal.SIGHUP)
    wait_until(lambda: d.metric(stamp) > before, 10, "the SIGHUP reload")
    check(d.metric("hotkey_config_last_reload_successful") == 1,
          "the reload as the unprivileged user re-read the rules file")


def case_unreadable(work):
    user = run_as_user()
    os.chmod(work.path, 0o700)  # root's only: the rules file inside is not readable
    r, sock = start_redis(work)
    rules = work.file("root-only-rules.yml")
    with open(rules, "w") as f:
        f.write(FAST_RULES)
    web = free_port()
    p = subprocess.run([HOTKEYD, f"--web.listen-address=127.0.0.1:{web}",
                        f"--udp.listen-address=127.0.0.1:{free_udp_port()}",
                        f"--config.file={rules}", "--tap.interface=lo", f"--tap.port={r.port}",
                        "--tap.protocol=redis", f"--shard.address={sock}",
                        f"--run-as={user.pw_name}", *FAST_FLAGS],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 1, f"the start fails: rc {p.returncode}, {p.stderr[-500:]}")
    check("--config.file is not readable" in p.stderr and rules in p.stderr
          and user.pw_name in p.stderr, f"it says which file and which user: {p.stderr[-500:]}")


def check_unprivileged(pid, user):
    threads = thread_status(pid)
    for tid, t in threads.items():
        check(t["Uid"].split() == [str(user.pw_uid)] * 4 and int(t["CapEff"], 16) == 0
              and int(t["CapPrm"], 16) == 0, f"thread {tid} ({t['Name']}) is unprivileged: "
              f"Uid {t['Uid']}, CapEff {t['CapEff']}")
    return threads


def case_storage(work):
    user = run_as_user()
    open_to_all(work)
    r, sock = start_redis(work)
    state_dir = work.file("state")
    os.mkdir(state_dir, 0o700)
    os.chown(state_dir, user.pw_uid, user.pw_gid)
    state = os.path.join(state_dir, "hotkeyd.state")
    d = Hotkeyd(HOTKEYD, work, r.port, "redis", f"--run-as={user.pw_name}",
                f"--shard.address={sock}", f"--storage.path={state}")
    threads = check_unprivileged(d.proc.pid, user)
    with open(d.log_path) as f:
        line = [ln for ln in f if "privileges dropped" in ln][0]
    check("threads=2" in line, f"the writer's thread existed at the switch: {line}")
    log(f"  threads: {describe(threads)}")
    Procs.stop(d.proc)
    check(d.proc.returncode == 0, f"a clean stop: rc {d.proc.returncode}")
    st = os.stat(state)
    check(st.st_uid == user.pw_uid, f"the state file saved at shutdown is the user's: {st.st_uid}")

    os.chown(state_dir, 0, 0)
    p = subprocess.run([HOTKEYD, f"--web.listen-address=127.0.0.1:{free_port()}",
                        f"--udp.listen-address=127.0.0.1:{free_udp_port()}",
                        f"--run-as={user.pw_name}", f"--storage.path={state}"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 1 and "--storage.path's directory is not writable" in p.stderr
          and state_dir in p.stderr, f"a root-only state directory fails the start: rc "
          f"{p.returncode}, {p.stderr[-300:]}")


def case_keep_root(work):
    open_to_all(work)
    r, sock = start_redis(work)
    d = Hotkeyd(HOTKEYD, work, r.port, "redis", "--run-as=root", f"--shard.address={sock}")
    threads = thread_status(d.proc.pid)
    log(f"  threads: {describe(threads)}")
    for tid, t in threads.items():
        check(t["Uid"].split()[1] == "0", f"thread {tid} keeps uid 0: {t['Uid']}")
    with open(d.log_path) as f:
        text = f.read()
    check("privileges kept" in text, "the log says root is kept")


def case_unknown_user(work):
    p = subprocess.run([HOTKEYD, "--web.listen-address=127.0.0.1:0", "--udp.listen-address=",
                        "--demo", "--run-as=no-such-user-hotkeyd"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 1 and "no-such-user-hotkeyd" in p.stderr,
          f"the start fails naming the user: rc {p.returncode}, {p.stderr[-300:]}")


def case_default_no_user(work):
    try:
        pwd.getpwnam("hotkeyd")
        log("  SKIP: this machine has a hotkeyd user")
        return
    except KeyError:
        pass
    nobody = pwd.getpwnam("nobody")
    open_to_all(work)
    # No server on the port: what is checked is who hotkeyd runs as, not what it counts.
    d = Hotkeyd(HOTKEYD, work, free_port(), "redis", keep_user=False)
    threads = check_unprivileged(d.proc.pid, nobody)
    log(f"  threads: {describe(threads)}")
    for tid, t in threads.items():
        check(int(t["CapBnd"], 16) == 0 and t["NoNewPrivs"] == "1",
              f"thread {tid}: empty bounding set and no_new_privs: {t['CapBnd']} {t['NoNewPrivs']}")
    with open(d.log_path) as f:
        text = f.read()
    check("user=nobody" in text and "no hotkeyd user: running as nobody" in text
          and "useradd --system" in text, f"the log says nobody, and how to add hotkeyd: {text[-800:]}")


def case_empty_run_as(work):
    p = subprocess.run([HOTKEYD, "--web.listen-address=127.0.0.1:0", "--udp.listen-address=",
                        "--demo", "--run-as="], capture_output=True, text=True, timeout=30)
    check(p.returncode == 1 and "only --run-as=root keeps root" in p.stderr,
          f"an empty --run-as fails the start: rc {p.returncode}, {p.stderr[-300:]}")


def case_writable_file(work):
    user = run_as_user()
    open_to_all(work)
    rules = work.file("users-rules.yml")
    with open(rules, "w") as f:
        f.write(FAST_RULES)
    os.chown(rules, user.pw_uid, user.pw_gid)
    argv = [HOTKEYD, f"--web.listen-address=127.0.0.1:{free_port()}", "--udp.listen-address=",
            "--demo", f"--run-as={user.pw_name}"]
    p = subprocess.run([*argv, f"--config.file={rules}"], capture_output=True, text=True,
                       timeout=30)
    check(p.returncode == 1 and "--config.file" in p.stderr and rules in p.stderr
          and f'user "{user.pw_name}"' in p.stderr,
          f"a rules file of the user's fails the start: rc {p.returncode}, {p.stderr[-400:]}")
    user_dir = work.file("users-dir")
    os.mkdir(user_dir, 0o755)
    os.chown(user_dir, user.pw_uid, user.pw_gid)
    rules2 = os.path.join(user_dir, "root-rules.yml")
    with open(rules2, "w") as f:
        f.write(FAST_RULES)
    p = subprocess.run([*argv, f"--config.file={rules2}"], capture_output=True, text=True,
                       timeout=30)
    check(p.returncode == 1 and "its directory" in p.stderr and user_dir in p.stderr,
          f"root's file in the user's directory fails the start: rc {p.returncode}, "
          f"{p.stderr[-400:]}")


def case_state_as_user(work):
    user = run_as_user()
    open_to_all(work)
    state_dir = work.file("root-state")
    os.mkdir(state_dir, 0o700)
    os.chown(state_dir, user.pw_uid, user.pw_gid)
    state = os.path.join(state_dir, "hotkeyd.state")
    with open(state, "wb") as f:
        f.write(b"root wrote this; the user cannot read it")
    os.chmod(state, 0o600)
    d = Hotkeyd(HOTKEYD, work, free_port(), "redis", f"--run-as={user.pw_name}",
                f"--storage.path={state}")
    check_unprivileged(d.proc.pid, user)
    wait_until(lambda: "saved state unusable" in open(d.log_path).read(), 10,
               "the state file's outcome in the log")
    with open(d.log_path) as f:
        lines = f.readlines()
    dropped = next(i for i, ln in enumerate(lines) if "privileges dropped" in ln)
    unusable = next(i for i, ln in enumerate(lines) if "saved state unusable" in ln)
    check(dropped < unusable and "Permission denied" in lines[unusable],
          f"the state file was opened by the user, after the switch: {lines[unusable]}")
    Procs.stop(d.proc)


CASES = [("dropped", case_dropped), ("unreadable", case_unreadable),
         ("storage", case_storage), ("keep_root", case_keep_root), ("unknown_user", case_unknown_user),
         ("default_no_user", case_default_no_user), ("empty_run_as", case_empty_run_as),
         ("writable_file", case_writable_file), ("state_as_user", case_state_as_user)]

if __name__ == "__main__":
    if os.geteuid() != 0:
        print("privilege_drop_e2e: SKIP: only root can switch users")
        sys.exit(77)
    require_programs("redis-server")
    if not hotkeyd_has_tap(HOTKEYD):
        sys.exit("FAIL: this hotkeyd has no tap")
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(128 + s))
    run_cases("privilege", CASES, sys.argv[2:])
