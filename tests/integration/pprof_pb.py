"""A minimal protobuf wire-format reader and writer for tests: enough to edit a profile.proto
(add strings and sample labels) with no protobuf library, independently of jitsym's codec."""

import gzip


def _varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def _put_varint(value):
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def decode(data):
    """Top-level fields as [(number, wire type, value)]: ints for varints, bytes otherwise."""
    fields, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire} at {i}")
        fields.append((number, wire, value))
    return fields


def encode(fields):
    out = bytearray()
    for number, wire, value in fields:
        out += _put_varint(number << 3 | wire)
        if wire == 0:
            out += _put_varint(value)
        elif wire == 2:
            out += _put_varint(len(value)) + value
        else:
            out += value
    return bytes(out)


def read_profile(path):
    with open(path, "rb") as f:
        data = f.read()
    return decode(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def with_pid_labels(fields, pid_of_sample):
    """A copy of a Profile's fields with a numeric `pid` label on sample i: pid_of_sample(i)."""
    strings = [v for n, w, v in fields if n == 6]
    key = len(strings)
    out, i = [], 0
    for number, wire, value in fields:
        if number == 2:  # Sample; Label is its field 3: key = 1, num = 3
            label = encode([(1, 0, key), (3, 0, pid_of_sample(i))])
            value = bytes(value) + encode([(3, 2, label)])
            i += 1
        out.append((number, wire, value))
    out.append((6, 2, b"pid"))
    return out


def write_profile(path, fields):
    with open(path, "wb") as f:
        f.write(gzip.compress(encode(fields)))
