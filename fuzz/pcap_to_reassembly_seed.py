#!/usr/bin/env python3
"""Turns a pcap capture into fuzz_reassembly inputs (the format is in fuzz_reassembly.cc),
or, given a TAP_MODE byte, into fuzz_tap inputs (the same with that byte after the header).

Writes one input per connection (a new one at each client SYN), so the seeds stay small:
    fuzz/pcap_to_reassembly_seed.py CAPTURE.pcap SERVER_PORT|auto OUT_PREFIX [TAP_MODE]
"auto" takes the destination port of the capture's first SYN. Only the classic pcap
format is read (what tcpdump -w writes), in either byte order.
"""

import struct
import sys

# fuzz_reassembly.cc's kLinks, by DLT_/LINKTYPE_ number.
LINKS = {1: 0, 113: 1, 276: 2, 0: 3, 108: 4, 12: 5, 101: 6, 228: 7, 229: 8}


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        sys.exit(f"{path}: not a classic pcap file")
    nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(endian + "I", data[20:24])[0] & 0x0FFFFFFF
    at, frames = 24, []
    while at + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack(endian + "IIII", data[at : at + 16])
        at += 16
        frames.append((sec + frac / (1e9 if nanos else 1e6), data[at : at + caplen]))
        at += caplen
    return linktype, frames


def syn_port(linktype, frame):
    """The destination port of a SYN without ACK, or None."""
    # Enough decoding for the split: Ethernet, cooked v1/v2, raw; IPv4 or IPv6 without
    # extension headers (what a loopback capture holds).
    offsets = {1: 14, 113: 16, 276: 20, 12: 0, 101: 0, 228: 0, 229: 0, 0: 4, 108: 4}
    ip = frame[offsets.get(linktype, 0) :]
    if not ip:
        return None
    if ip[0] >> 4 == 4:
        tcp = ip[(ip[0] & 15) * 4 :]
    elif ip[0] >> 4 == 6:
        tcp = ip[40:]
    else:
        return None
    if len(tcp) < 14 or tcp[13] & 0x12 != 0x02:
        return None
    return struct.unpack(">H", tcp[2:4])[0]


def is_client_syn(linktype, frame, port):
    return syn_port(linktype, frame) == port


def main():
    path, port, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
    linktype, frames = read_pcap(path)
    if port == "auto":
        port = next(p for p in (syn_port(linktype, f) for _, f in frames) if p is not None)
    port = int(port)
    header = bytes([LINKS[linktype], 7]) + struct.pack(">H", port)  # 8 flows
    if len(sys.argv) > 4:
        header += bytes([int(sys.argv[4])])
    inputs, last = [], None
    for t, frame in frames:
        if is_client_syn(linktype, frame, port) or not inputs:
            inputs.append(bytearray(header))
            last = t
        step = min(255, int(round((t - last) * 100)))
        last = t
        inputs[-1] += struct.pack(">HB", len(frame), step) + frame
    for i, data in enumerate(inputs):
        with open(f"{prefix}{i}", "wb") as f:
            f.write(data)
    print(f"{len(inputs)} inputs from {len(frames)} frames")


if __name__ == "__main__":
    main()
