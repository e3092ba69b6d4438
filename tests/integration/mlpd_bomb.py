"""Gzip'd Mono log profiler files that inflate to far more than their size, for the attack test
and the inflate benchmark. The header is written from mono/profiler/log.h's layout (data
version 17, format 3); each buffer holds bytes that are no event, which the format says to skip
(the rest of a buffer after an undecodable event is ignored), so the daemon spends its time
inflating, not indexing."""

import struct
import zlib

from mlpd import mlpd_header


def mlpd_bomb(pid, buffers, buffer_bytes=32 << 20):
    """`buffers` buffers of `buffer_bytes`: a few MB that inflate to buffers * buffer_bytes. One
    gzip member per buffer, concatenated (as `|gzip` restarted writes them): built once and
    repeated."""

    def member(prefix):
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        out = c.compress(prefix + struct.pack("<II5Q", 0x4D504C01, buffer_bytes, 0, 0, 0, 0, 0))
        chunk = b"\xff" * (1 << 20)
        for _ in range(buffer_bytes >> 20):
            out += c.compress(chunk)
        return out + c.flush()

    first = member(mlpd_header(pid))
    rest = member(b"")
    return first + rest * (buffers - 1)
