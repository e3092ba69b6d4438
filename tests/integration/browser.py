"""Headless Chromium for the tests: a screenshot of a page, the DOM after its scripts ran, and a
PNG reader (zlib and struct only) to tell a blank screenshot from a drawn one.

  png = screenshot("file:///tmp/x.svg", "/tmp/x.png")
  stats = png_stats(png)         # width, height, distinct colours, non-white pixels
  html = dump_dom("file:///tmp/x.svg#search=main")
"""

import os
import shutil
import struct
import subprocess
import tempfile
import zlib


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args, timeout):
    binary = find_chromium()
    if binary is None:
        raise AssertionError("chromium not found (Debian: apt install chromium)")
    # A profile directory of our own: parallel runs and the user's profile stay apart. As root
    # Chromium needs --no-sandbox.
    with tempfile.TemporaryDirectory(prefix="jitsym-chromium-") as profile:
        cmd = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-extensions", "--disable-background-networking",
               f"--user-data-dir={profile}"] + args
        return subprocess.run(cmd, capture_output=True, timeout=timeout)


def screenshot(url, png_path, width=1200, height=800, timeout=60):
    """Loads url and writes a PNG of the window; returns png_path."""
    if os.path.exists(png_path):
        os.unlink(png_path)
    res = _run([f"--screenshot={png_path}", f"--window-size={width},{height}", url], timeout)
    if not os.path.exists(png_path):
        raise AssertionError(f"chromium wrote no screenshot (status {res.returncode}): "
                             f"{res.stderr.decode(errors='replace')[-800:]}")
    return png_path


def dump_dom(url, timeout=60):
    """The serialized DOM of url once loaded (after its scripts ran)."""
    res = _run(["--dump-dom", url], timeout)
    if res.returncode != 0:
        raise AssertionError(f"chromium --dump-dom failed ({res.returncode}): "
                             f"{res.stderr.decode(errors='replace')[-800:]}")
    return res.stdout.decode("utf-8", errors="replace")


def read_png(path):
    """(width, height, channels, rows): rows are bytes, 8-bit RGB or RGBA, unfiltered."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError(f"{path} is not a PNG")
    pos, idat, header = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        raise AssertionError(f"unsupported PNG: depth {depth} colour type {colour} "
                             f"interlace {interlace}")
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = prev[i]
                c = prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def png_stats(path):
    """{"width", "height", "colours": distinct RGB values, "non_white": pixels not near white}."""
    width, height, channels, rows = read_png(path)
    colours, non_white = set(), 0
    for row in rows:
        for x in range(0, len(row), channels):
            rgb = row[x:x + 3]
            colours.add(rgb)
            if min(rgb) < 235:
                non_white += 1
    return {"width": width, "height": height, "colours": len(colours), "non_white": non_white}
