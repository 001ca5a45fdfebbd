#!/usr/bin/env python3
"""Writes the hand-made seeds of fuzz/corpus/fuzz_reassembly/ (the format is in
fuzz_reassembly.cc): every link type, VLAN tags, IPv6 extension headers, fragments,
retransmission, a gap, sequence wraparound, a join mid-stream, FIN and RST, more flows
than the table holds, idle expiry, and frames cut short. Run by hand when the format
changes:  fuzz/make_reassembly_seeds.py fuzz/corpus/fuzz_reassembly
"""

import struct
import sys

LINK = {"en10mb": 0, "sll": 1, "sll2": 2, "null": 3, "loop": 4, "raw": 5, "ipv4": 7, "ipv6": 8}
PORT = 6379
SYN, FIN, RST, PSH, ACK = 0x02, 0x01, 0x04, 0x08, 0x10


def tcp(sport, dport, seq, flags, payload=b""):
    return struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 0, 5 << 4, flags, 65535, 0, 0) + payload


def ipv4(l4, src=b"\x0a\x00\x00\x01", dst=b"\x0a\x00\x00\x02", frag=0x4000):
    return struct.pack(">BBHHHBBH", 0x45, 0, 20 + len(l4), 1, frag, 64, 6, 0) + src + dst + l4


def ipv6(l4, next_header=6, ext=b""):
    src = b"\x20\x01\x0d\xb8" + b"\x00" * 11 + b"\x01"
    dst = b"\x20\x01\x0d\xb8" + b"\x00" * 11 + b"\x02"
    body = ext + l4
    return struct.pack(">IHBB", 0x60000000, len(body), next_header, 64) + src + dst + body


def ether(ip, v6=False, tags=()):
    out = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01"
    for t in tags:
        out += struct.pack(">HH", t, 100)
    return out + struct.pack(">H", 0x86DD if v6 else 0x0800) + ip


def sll(ip, v6=False):
    return struct.pack(">HHH", 0, 1, 6) + b"\x02\x00\x00\x00\x00\x01\x00\x00" + \
        struct.pack(">H", 0x86DD if v6 else 0x0800)+ ip


def sll2(ip, v6=False):
    return struct.pack(">HHIHBB", 0x86DD if v6 else 0x0800, 0, 1, 772, 0, 6) + b"\x00" * 8 + ip


def seed(link, frames, flows=4):
    out = bytes([LINK[link], flows - 1]) + struct.pack(">H", PORT)
    for step, frame in frames:
        out += struct.pack(">HB", len(frame), step) + frame
    return out


def conversation(wrap, cport=40000, c=1000, s=5000, v6=False):
    """SYN, SYN-ACK, a request in two segments, a retransmission, a reply, FINs."""
    ip = ipv6 if v6 else ipv4
    f = lambda sp, dp, seq, fl, p=b"": wrap(ip(tcp(sp, dp, seq, fl, p)))
    req = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"
    return [
        (0, f(cport, PORT, c, SYN)),
        (0, f(PORT, cport, s, SYN | ACK)),
        (0, f(cport, PORT, c + 1, ACK)),
        (1, f(cport, PORT, c + 1, ACK | PSH, req[:7])),
        (0, f(cport, PORT, c + 8, ACK | PSH, req[7:])),
        (0, f(cport, PORT, c + 1, ACK | PSH, req)),  # retransmitted
        (1, f(PORT, cport, s + 1, ACK | PSH, b"$-1\r\n")),
        (0, f(cport, PORT, c + 1 + len(req), FIN | ACK)),
        (0, f(PORT, cport, s + 6, FIN | ACK)),
        (0, f(cport, PORT, c + 2 + len(req), ACK)),
    ]


def main():
    out = sys.argv[1]
    seeds = {
        "hand_en10mb": seed("en10mb", conversation(ether)),
        "hand_vlan_qinq": seed("en10mb", conversation(lambda ip: ether(ip, tags=(0x88A8, 0x8100)))),
        "hand_sll_v6": seed("sll", conversation(lambda ip: sll(ip, True), v6=True)),
        "hand_sll2": seed("sll2", conversation(sll2)),
        "hand_null": seed("null", conversation(lambda ip: struct.pack("<I", 2) + ip)),
        "hand_loop_v6": seed("loop", conversation(lambda ip: struct.pack(">I", 24) + ip, v6=True)),
        "hand_raw": seed("raw", conversation(lambda ip: ip)),
        "hand_wrap": seed("ipv4", conversation(lambda ip: ip, c=0xFFFFFFF0, s=0xFFFFFFFE)),
    }
    # Joined mid-stream, a gap, then a RST.
    seeds["hand_midstream_gap_rst"] = seed("ipv4", [
        (0, ipv4(tcp(40001, PORT, 777, ACK | PSH, b"LUE\r\n*1\r\n$4\r\nPING\r\n"))),
        (0, ipv4(tcp(PORT, 40001, 123, ACK | PSH, b"+OK\r\n"))),
        (0, ipv4(tcp(40001, PORT, 900, ACK | PSH, b"*1\r\n$4\r\nPING\r\n"))),
        (0, ipv4(tcp(PORT, 40001, 128, RST))),
        (0, ipv4(tcp(40001, PORT, 914, RST))),
    ])
    # Twelve flows through a two-flow table, then a long pause: eviction and expiry.
    many = []
    for i in range(12):
        many.append((0, ipv4(tcp(41000 + i, PORT, 1, ACK | PSH, b"*1\r\n$4\r\nPING\r\n"))))
    many.append((200, ipv4(tcp(41011, PORT, 15, ACK | PSH, b"*1\r\n$4\r\nPING\r\n"))))
    seeds["hand_evict_expire"] = seed("ipv4", many, flows=2)
    # IPv6 extension headers (hop-by-hop, routing, atomic fragment) and a real fragment.
    hbh = bytes([43, 0, 1, 4, 0, 0, 0, 0])
    routing = bytes([44, 0, 1, 4, 0, 0, 0, 0])
    atomic = bytes([6, 0, 0, 0, 0, 0, 0, 1])
    frag = bytes([6, 0, 0, 1, 0, 0, 0, 2])  # offset 0, more fragments
    seg = tcp(40002, PORT, 1, ACK | PSH, b"*1\r\n$4\r\nPING\r\n")
    seeds["hand_ipv6_ext"] = seed("ipv6", [
        (0, ipv6(seg, 0, hbh + routing + atomic)),
        (0, ipv6(seg, 44, frag)),
        (0, ipv4(seg, frag=0x2000)),
    ])
    # Frames cut short and headers that cannot be valid.
    good = ether(ipv4(tcp(40003, PORT, 1, ACK | PSH, b"*1\r\n$4\r\nPING\r\n")))
    bad_ihl = bytearray(good)
    bad_ihl[14] = 0x43
    bad_offset = bytearray(good)
    bad_offset[14 + 20 + 12] = 0x20
    seeds["hand_broken"] = seed("en10mb", [
        (0, good[:10]), (0, good[:20]), (0, good[:40]), (0, good[:-1]),
        (0, bytes(bad_ihl)), (0, bytes(bad_offset)), (0, good),
    ])
    for name, data in seeds.items():
        with open(f"{out}/{name}", "wb") as f:
            f.write(data)
    print(f"{len(seeds)} seeds")


if __name__ == "__main__":
    main()
