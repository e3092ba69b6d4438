"""An independent perf map reader for the integration tests, written from perf's
tools/perf/Documentation/jit-interface.txt (`START SIZE symbolname`, hex, one per line), not from
the daemon's parser.

The expected answer for an address without a time is the last line of the file covering it
(perf's "later line wins"), which the daemon's live time-stamping must agree with.
"""

import re

LINE = re.compile(rb"^[ \t]*(?:0[xX])?([0-9a-fA-F]+)[ \t]+(?:0[xX])?([0-9a-fA-F]+)[ \t]+"
                  rb"([^\r\n]+?)\r?$")


class Line:
    def __init__(self, start, size, name, offset):
        self.start, self.size, self.name, self.offset = start, size, name, offset

    @property
    def end(self):
        return self.start + self.size


def read(path):
    """Every well-formed, complete line of the file, in file order."""
    with open(path, "rb") as f:
        data = f.read()
    out, offset = [], 0
    for raw in data.split(b"\n")[:-1]:  # the last piece has no newline yet (or is empty)
        m = LINE.match(raw)
        if m:
            out.append(Line(int(m.group(1), 16), int(m.group(2), 16),
                            m.group(3).decode("utf-8", "replace"), offset))
        offset += len(raw) + 1
    return out


def latest(lines, addr):
    """The last line covering addr, or None."""
    for line in reversed(lines):
        if line.size and line.start <= addr < line.end:
            return line
    return None
