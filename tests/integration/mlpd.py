"""Mono log profiler files (.mlpd) for the tests, in the layout of mono's profiler/log.h and
log.c (data version 17, format 3), as tests/unit/testing/mlpd_builder.h writes them."""

import struct
import time


def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def sleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if (v == 0 and not b & 0x40) or (v == -1 and b & 0x40):
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def mlpd_header(pid, time_ms=1700000000000, start_ns=1000000, output=b"x.mlpd"):
    """The file header: its pid is the process the file is about."""
    out = struct.pack("<IBBBBQQIIIH", 0x4D505A01, 3, 0, 17, 8, time_ms, start_ns, 32, 0, pid, 0)
    for s in (b"log:output=" + output, b"x86-64", b"linux"):
        out += struct.pack("<I", len(s) + 1) + s + b"\0"
    return out


def mlpd_file(pid, base, names, output=b"long.mlpd"):
    """The header, then one buffer of TYPE_JIT events (method, code address relative to the
    buffer's base, size, name) for `names`, a list of (address, size, name bytes)."""
    t0 = time.monotonic_ns()
    header = mlpd_header(pid, int(time.time() * 1000), t0, output)
    events = bytearray()
    for i, (addr, size, name) in enumerate(names):
        events += bytes([0x40 | 3]) + uleb(1 if i else 0) + sleb(0x10) + sleb(addr - base)
        events += uleb(size) + name + b"\0"
    buffer = struct.pack("<IIQQQQQ", 0x4D504C01, len(events), t0, base, 0x1000, 0x7001,
                         0x5000000)
    return header + buffer + bytes(events)
