#!/usr/bin/env python3
"""A slow reader of one large jitsymd answer, run as an unprivileged user by
test_answer_streaming.py:

  answer_reader.py SOCKET REQUEST MEMBER PACE_MS

sends REQUEST (one JSON line), then reads the answer in 256 KiB pieces, sleeping PACE_MS after
each, and parses it as it arrives: every element of the array member MEMBER ("symbols",
"processes") is decoded on its own (json raw_decode) and counted, never kept, so the reader's
memory stays small whatever the answer's size. At the end it prints one JSON line:

  {"bytes": N, "elements": N, "rest": {...the answer without MEMBER's elements...},
   "first": ELEMENT, "last": ELEMENT, "ordered": BOOL, "keys": [...], "seconds": S}

"ordered": elements with "start" and "size" are sorted by start and do not overlap. An answer
that is not valid JSON, or a connection closed before the newline, prints {"error": ...}."""

import codecs
import json
import socket
import sys
import time

CHUNK = 256 * 1024


def main():
    path, request, member, pace = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(request.encode() + b"\n")
    t0 = time.monotonic()
    utf8 = codecs.getincrementaldecoder("utf-8")()
    decoder = json.JSONDecoder()
    opening = f'"{member}":['
    buf = ""
    head = None  # the line up to and including `"member":[`
    tail = ""    # the line after the array's closing ']'
    in_array = False
    done = False
    total = 0
    count = 0
    first = last = None
    keys = set()
    ordered = True
    prev_end = None
    while not done:
        data = s.recv(CHUNK)
        if not data:
            print(json.dumps({"error": f"closed after {total} bytes", "elements": count}))
            return
        total += len(data)
        buf += utf8.decode(data)
        if head is None:
            at = buf.find(opening)
            if at < 0:
                if "\n" in buf:  # a whole answer without the array: an error, say
                    head, tail, done = "", buf[:buf.index("\n")], True
                    break
                continue
            head = buf[:at + len(opening)]
            buf = buf[at + len(opening):]
            in_array = True
        pos = 0
        while in_array:
            while pos < len(buf) and buf[pos] in " ,":
                pos += 1
            if pos == len(buf):
                break
            if buf[pos] == "]":
                in_array = False
                pos += 1
                break
            try:
                element, end = decoder.raw_decode(buf, pos)
            except json.JSONDecodeError:
                if len(buf) - pos > (4 << 20):
                    print(json.dumps({"error": f"element {count} is not JSON: "
                                      f"{buf[pos:pos + 200]!r}"}))
                    return
                break  # the rest of it has not arrived yet
            if end == len(buf):
                break  # a number or literal may go on in the next piece: decode it again then
            pos = end
            count += 1
            if first is None:
                first = element
                keys = set(element)
            last = element
            if isinstance(element, dict) and "start" in element and "size" in element:
                start = int(element["start"], 16)
                if prev_end is not None and start < prev_end:
                    ordered = False
                prev_end = start + element["size"]
        buf = buf[pos:]
        if not in_array and head is not None:
            tail += buf
            buf = ""
            if "\n" in tail:
                tail = tail[:tail.index("\n")]
                done = True
        if pace > 0:
            time.sleep(pace / 1000)
    try:
        rest = json.loads(head + "]" + tail if head else tail)
    except json.JSONDecodeError as e:
        print(json.dumps({"error": f"the answer around its elements is not JSON: {e}: "
                          f"{(head + ']' + tail)[:300]!r}"}))
        return
    print(json.dumps({"bytes": total, "elements": count, "rest": rest, "first": first,
                      "last": last, "ordered": ordered, "keys": sorted(keys),
                      "seconds": round(time.monotonic() - t0, 2)}))


main()
