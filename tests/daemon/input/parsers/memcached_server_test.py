#!/usr/bin/python3
"""The memcached parsers against a real memcached, driven by pymemcache and raw sockets.

Starts `memcached -p <free port> -U 0 -l 127.0.0.1` and a recording TCP proxy in front of
it. Each scenario talks to memcached through the proxy, which keeps the bytes of each
direction of each connection. The truth is the scenario's own record of what it asked for
(keys, read or write, whether the server answers). memcached_dump then parses the recorded
bytes (whole, one byte at a time, and in 7-byte pieces) and the test checks that:
  - the requests come out in order with exactly those keys and access;
  - their wire bytes add up to what the client sent;
  - the server's bytes frame into exactly one reply per request that expects one, and the
    replies' bytes add up to what the server sent.
It also pins the server behaviour the parser's essay relies on: malformed lines answered
without a data block, padded base64 only, the 2048-byte line limit (get and gets exempt),
the replies a get with an over-long key drops, and what the meta q flag suppresses.

usage: memcached_server_test.py MEMCACHED_DUMP MEMCACHED
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

from pymemcache.client.base import Client

DUMP, MEMCACHED = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_memcached():
    for _ in range(5):
        port = free_port()
        args = [MEMCACHED, "-p", str(port), "-U", "0", "-l", "127.0.0.1"]
        if os.geteuid() == 0:
            args += ["-u", "root"]
        proc = subprocess.Popen(args)
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return proc, port
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
        proc.kill()
        proc.wait()
    sys.exit("memcached did not start")


class Proxy:
    """Relays connections to memcached and records each direction's bytes."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.connections = []  # [c2s bytearray, s2c bytearray, threads], in accept order
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream_port))
            record = [bytearray(), bytearray(), []]
            for src, dst, buf in ((client, server, record[0]), (server, client, record[1])):
                record[2].append(
                    threading.Thread(target=self._pump, args=(src, dst, buf), daemon=True))
            with self.lock:
                self.connections.append(record)
            for t in record[2]:
                t.start()

    @staticmethod
    def _pump(src, dst, buf):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            buf += data
            dst.sendall(data)

    def accepted(self):
        with self.lock:
            return len(self.connections)

    def recorded(self, index):
        """Connection `index`'s recorded bytes, once both directions have ended."""
        deadline = time.time() + 10
        while self.accepted() <= index and time.time() < deadline:
            time.sleep(0.01)
        with self.lock:
            record = self.connections[index]
        for t in record[2]:
            t.join(timeout=10)
        return bytes(record[0]), bytes(record[1])


def dump(mode, data, step=0):
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        out = subprocess.run([DUMP, mode, f.name, str(step)], check=True, capture_output=True)
    lines = [json.loads(line) for line in out.stdout.decode().splitlines()]
    return lines[:-1], lines[-1]["counters"]


def check_connection(name, truth, c2s, s2c, clean=True):
    """truth: [(keys as [(key bytes, 'r'|'w')], expects_reply)] in request order; clean:
    the stream holds no unknown command and no malformed request."""
    failed_before = len(failures)
    requests, counters = dump("requests", c2s)
    parsed, pieces = [], []
    for r in requests:
        pieces += [(k.encode("latin-1"), a) for k, a in r["keys"]]
        if r["last"]:  # a multi-get's earlier pieces join its last one
            parsed.append((pieces, r["reply"]))
            pieces = []
        else:
            check(not r["reply"], f"{name}: an earlier piece expects no reply")
    want = [(list(k), rep) for k, rep in truth]
    check(parsed == want, f"{name}: requests\n  parsed {parsed}\n  want   {want}")
    check(sum(r["bytes"] for r in requests) == len(c2s), f"{name}: request bytes")
    if clean:
        check(counters["unknown_commands"] == 0 and counters["protocol_errors"] == 0,
              f"{name}: clean stream counted errors: {counters}")
    for step in (1, 7):
        again, again_counters = dump("requests", c2s, step)
        check(again == requests and again_counters == counters, f"{name}: split in {step}s")
    replies, reply_counters = dump("replies", s2c)
    expected_replies = sum(1 for _, rep in truth if rep)
    check(len(replies) == expected_replies,
          f"{name}: {len(replies)} replies framed, {expected_replies} expected")
    check(sum(r["reply"] for r in replies) == len(s2c), f"{name}: reply bytes")
    check(reply_counters["protocol_errors"] == 0, f"{name}: reply errors {reply_counters}")
    for step in (1, 7):
        check(dump("replies", s2c, step)[0] == replies, f"{name}: replies split in {step}s")
    if len(failures) == failed_before:
        print(f"ok {name}: {len(requests)} requests, {len(replies)} replies", flush=True)
    return counters


def R(*keys):
    return [(k, "r") for k in keys]


def W(*keys):
    return [(k, "w") for k in keys]


def raw_session(proxy, chunks, expect_replies):
    """Sends each chunk and reads until `expect_replies` reply terminators arrived."""
    index = proxy.accepted()
    s = socket.create_connection(("127.0.0.1", proxy.port))
    s.settimeout(5)
    for chunk in chunks:
        s.sendall(chunk)
    # Read until the server has answered the final mn/version, then close.
    received = b""
    while not received.endswith(expect_replies):
        data = s.recv(65536)
        if not data:
            break
        received += data
    s.close()
    return proxy.recorded(index)


def main():
    proc, port = start_memcached()
    try:
        proxy = Proxy(port)

        # pymemcache's own commands (default_noreply=True as it ships).
        index = proxy.accepted()
        client = Client(("127.0.0.1", proxy.port))
        truth = []
        client.set_many({"a": b"1", "b": b"2", "c": b"3"})
        truth += [(W(b"a"), False), (W(b"b"), False), (W(b"c"), False)]
        client.get_many(["a", "b", "c", "missing"])
        truth.append((R(b"a", b"b", b"c", b"missing"), True))
        client.set("n", b"10", noreply=False)
        truth.append((W(b"n"), True))
        client.incr("n", 5)
        truth.append((W(b"n"), True))
        client.decr("n", 2, noreply=True)
        truth.append((W(b"n"), False))
        _, cas = client.gets("a")
        truth.append((R(b"a"), True))
        client.cas("a", b"new", cas)
        truth.append((W(b"a"), True))
        client.cas("a", b"stale", cas)  # EXISTS
        truth.append((W(b"a"), True))
        client.gets_many(["a", "b"])
        truth.append((R(b"a", b"b"), True))
        client.add("d", b"x", noreply=False)
        client.replace("d", b"y", noreply=False)
        client.append("d", b"z", noreply=False)
        client.prepend("d", b"w", noreply=False)
        truth += [(W(b"d"), True)] * 4
        client.touch("c", 100, noreply=False)
        truth.append((W(b"c"), True))
        client.delete("b", noreply=False)
        client.delete("c")
        truth += [(W(b"b"), True), (W(b"c"), False)]
        client.delete_many(["x1", "x2"], noreply=False)
        truth += [(W(b"x1"), True), (W(b"x2"), True)]
        big = b"v" * 500_000
        client.set("big", big, noreply=False)
        truth.append((W(b"big"), True))
        check(client.get("big") == big, "pymemcache: the big value round-trips")
        truth.append((R(b"big"), True))
        many = [f"k{i:04d}" for i in range(600)]  # a 3.6 KB line: over 2048 bytes
        client.get_many(many)
        truth.append((R(*[k.encode() for k in many]), True))
        client.stats()
        client.version()
        truth += [([], True), ([], True)]
        client.close()
        check_connection("pymemcache", truth, *proxy.recorded(index))

        # gat and gats (pymemcache 3.5 has neither), meta commands, noreply forms.
        chunks = [
            b"set g1 0 0 2\r\nhi\r\n",
            b"gat 100 g1 g2\r\n",
            b"gats 0 g1\r\n",
            b"ms m1 3 T0\r\nabc\r\n",
            b"mg m1 v k t\r\n",
            b"mg nope v q\r\n",  # a quiet miss: no reply
            b"ms m2 2 q\r\nxy\r\n",  # a quiet success: no reply
            b"ms YmluYXJ5 2 b\r\nzz\r\n",  # base64 key "binary"
            b"mg YmluYXJ5 b v\r\n",
            b"get binary\r\n",
            b"ma n D3\r\n",
            b"md m2 q\r\n",  # quiet success
            b"md m1\r\n",
            b"mn\r\n",
            b"flush_all noreply\r\n",
            b"verbosity 1 noreply\r\n",
            b"cache_memlimit 64 noreply\r\n",
            b"version noreply\r\n",  # version reads no noreply: answered
            b"version\r\n",
        ]
        truth = [
            (W(b"g1"), True),
            (R(b"g1", b"g2"), True),
            (R(b"g1"), True),
            (W(b"m1"), True),
            (R(b"m1"), True),
            (R(b"nope"), False),
            (W(b"m2"), False),
            (W(b"binary"), True),
            (R(b"binary"), True),
            (R(b"binary"), True),
            (W(b"n"), True),
            (W(b"m2"), False),
            (W(b"m1"), True),
            ([], True),
            ([], False),
            ([], False),
            ([], False),
            ([], True),
            ([], True),
        ]
        # The "n" of ma exists from the pymemcache session only if flushed later: create it.
        chunks.insert(0, b"set n 0 0 1\r\n5\r\n")
        truth.insert(0, (W(b"n"), True))
        check_connection("raw text and meta", truth, *raw_session(proxy, chunks, b"VERSION 1.6.18\r\n"))

        # Malformed requests: the server answers each (ERROR, CLIENT_ERROR) and reads no
        # data block after a bad storage line, so the value is a command of its own; a bad
        # data chunk is consumed for <bytes>+2 bytes, and what follows is a command.
        k251 = b"k" * 251
        chunks = [
            b"set " + k251 + b" 0 0 5\r\nhello\r\n",
            b"cas n 0 0 1\r\n7\r\n",
            b"set a 0 0 3\r\nhelloo\r\n",
            b"\r\n",
            b"bogus command\r\n",
            b"incr a x\r\n",
            b"ms " + k251 + b" 5\r\nhello\r\n",
            b"mg !!! b v\r\n",
            b"mg YWI b v\r\n",  # unpadded base64: memcached refuses it too
            b"version\r\n",
        ]
        truth = [([], True), ([], True), ([], True), ([], True), (W(b"a"), True), ([], True),
                 ([], True), ([], True), ([], True), ([], True), ([], True), ([], True),
                 ([], True), ([], True)]
        counters = check_connection("malformed", truth,
                                    *raw_session(proxy, chunks, b"VERSION 1.6.18\r\n"),
                                    clean=False)
        check(counters["unknown_commands"] == 6 and counters["protocol_errors"] == 7,
              f"malformed: counted {counters}")
        # A multi-get with a key over 250 bytes: the keys before it were read, the server
        # answers one CLIENT_ERROR. (memcached 1.6 also drops the replies it had queued for
        # requests pipelined before it, so this one goes on a connection of its own.)
        counters = check_connection(
            "get with a long key", [(R(b"a"), True), ([], True)],
            *raw_session(proxy, [b"get a " + k251 + b" b\r\n", b"version\r\n"],
                         b"VERSION 1.6.18\r\n"), clean=False)
        check(counters["protocol_errors"] == 1, f"get with a long key: counted {counters}")

        # The server behaviour the parser's limits follow (daemon/input/parsers/memcached.cc): a command
        # line that has passed 2048 bytes without its newline closes the connection, unless
        # it is a get or gets, whose lines are unbounded.
        def partial_line(head, tail):
            s = socket.create_connection(("127.0.0.1", port))
            s.settimeout(5)
            s.sendall(head)
            time.sleep(0.2)  # on purpose: the server reads the head alone before the tail
            try:
                s.sendall(tail)
                data = s.recv(65536)
            except OSError:
                data = b""
            s.close()
            return data

        check(partial_line(b"set c 0 0 1" + b" " * 2500, b"\r\nx\r\n") == b"",
              "a 2.5 KB set line in pieces closes the connection")
        check(partial_line(b"gat 0" + b" c" * 1500, b"\r\n") == b"",
              "a 3 KB gat line in pieces closes the connection")
        check(partial_line(b"get" + b" c" * 1500, b"\r\n") == b"END\r\n",
              "a 3 KB get line in pieces is answered")
        # A get with a key over 250 bytes drops the replies queued before it in the same
        # read: STORED never comes.
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(5)
        s.sendall(b"set q 0 0 1\r\n1\r\nget " + k251 + b"\r\nversion\r\n")
        received = b""
        while not received.endswith(b"VERSION 1.6.18\r\n"):
            data = s.recv(65536)
            if not data:
                break
            received += data
        s.close()
        check(received == b"CLIENT_ERROR bad command line format\r\nVERSION 1.6.18\r\n",
              f"a get with a long key drops the replies queued before it: {received!r}")

        # What q suppresses (the essay's note on quiet batches): mg q a miss only, ms and md
        # q a success only; mn always answers.
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(5)
        s.sendall(b"mg absent v q\r\nms qk 2 q\r\nhi\r\nmg qk v q\r\nmd absent q\r\n"
                  b"md qk q\r\nmn\r\n")
        received = b""
        while not received.endswith(b"MN\r\n"):
            data = s.recv(65536)
            if not data:
                break
            received += data
        s.close()
        check(received == b"VA 2\r\nhi\r\nNF\r\nMN\r\n", f"quiet mode replies: {received!r}")

        # The binary protocol: Set, Get, GetQ (a miss: no reply), Delete, Noop.
        def binary(opcode, key=b"", extras=b"", value=b""):
            body = len(extras) + len(key) + len(value)
            header = bytes([0x80, opcode]) + len(key).to_bytes(2, "big") + bytes([len(extras), 0])
            header += b"\0\0" + body.to_bytes(4, "big") + b"\0" * 12
            return header + extras + key + value

        chunks = [
            binary(0x01, b"bin1", b"\0" * 8, b"value"),
            binary(0x00, b"bin1"),
            binary(0x09, b"absent"),
            binary(0x04, b"bin1"),
            binary(0x0A),
        ]
        truth = [(W(b"bin1"), True), (R(b"bin1"), True), (R(b"absent"), False),
                 (W(b"bin1"), True), ([], True)]
        index = proxy.accepted()
        s = socket.create_connection(("127.0.0.1", proxy.port))
        s.settimeout(5)
        s.sendall(b"".join(chunks))
        received = b""
        while len(received) < 24 * 4 + 4 + 5:  # four replies (Get has 4 bytes of flags)
            data = s.recv(65536)
            if not data:
                break
            received += data
        s.close()
        check_connection("binary", truth, *proxy.recorded(index))
    finally:
        proc.terminate()
        proc.wait()
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("all checks passed")


if __name__ == "__main__":
    main()
