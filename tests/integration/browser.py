"""Headless Chromium for the tests: a screenshot of a page, the DOM after its scripts ran, a page
driven with real mouse and keyboard input (the DevTools protocol on a pipe, no extra package),
and a PNG reader (zlib and struct only) to tell a blank screenshot from a drawn one.

  png = screenshot("file:///tmp/x.svg", "/tmp/x.png")
  stats = png_stats(png)         # width, height, distinct colours, non-white pixels
  html = dump_dom("file:///tmp/x.svg#search=main")
  with Page("file:///tmp/x.svg") as page: page.click(x, y); page.eval("...")
"""

import fcntl
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
    """Loads url and writes a PNG of the window once its scripts ran (as a person sees it: a
    page that scrolls itself on load is shown scrolled); returns png_path."""
    if os.path.exists(png_path):
        os.unlink(png_path)
    with Page(url, width, height, timeout) as page:
        page.screenshot(png_path)
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


class Page:
    """A page in headless Chromium driven over the DevTools protocol on a pipe
    (--remote-debugging-pipe: JSON messages ending in NUL, commands on fd 3, answers on fd 4),
    for real mouse and keyboard input:

        with Page("file:///tmp/x.svg") as page:
            page.click(100, 700)
            page.eval("document.getElementById('details').textContent")
    """

    def __init__(self, url, width=1200, height=800, timeout=30):
        import json
        import select
        self._json, self._select = json, select
        self.timeout = timeout
        binary = find_chromium()
        if binary is None:
            raise AssertionError("chromium not found (Debian: apt install chromium)")
        self._profile = tempfile.mkdtemp(prefix="jitsym-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        # The protocol's fixed descriptors in the child: moved above 10 first, so that setting
        # 3 cannot close the other one before it is moved to 4.
        high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)

        def setup_fds():
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--remote-debugging-pipe",
             f"--user-data-dir={self._profile}", f"--window-size={width},{height}",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=setup_fds, close_fds=False, start_new_session=True)
        for fd in (to_child_r, from_child_w, high_r, high_w):
            os.close(fd)
        self._buf, self._next_id, self._events = b"", 0, []
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=None)
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True},
                                 session=None)["sessionId"]
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        # Chromium's renderer and utility processes outlive a killed browser process and keep
        # writing into the profile directory: ask it to quit, then end the whole group.
        import signal
        if self.proc.poll() is None:
            try:
                self.call("Browser.close", session=None)
            except (AssertionError, OSError):
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def _read_message(self, deadline):
        import time
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self._select.select([self._from_child], [], [], left)[0]:
                raise AssertionError("chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise AssertionError("chromium closed the DevTools pipe")
            self._buf += chunk
        message, self._buf = self._buf.split(b"\0", 1)
        return self._json.loads(message)

    def call(self, method, params=None, session=True):
        import time
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_child, self._json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self._events.append(reply)

    def wait_event(self, name):
        import time
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self._events):
                if event["method"] == name:
                    return self._events.pop(i)
            self._events.append(self._read_message(deadline))

    def eval(self, expression):
        """The value of a JavaScript expression in the page (JSON-able)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, png_path):
        """A PNG of the window as a person sees it now (scrolled, zoomed); returns png_path."""
        import base64
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(png_path, "wb") as f:
            f.write(base64.b64decode(data))
        return png_path

    def move(self, x, y):
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def click(self, x, y):
        self.move(x, y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent",
                      {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def key(self, key, code, key_code, modifiers=0):
        """A key press: modifiers 2 is Ctrl."""
        for kind in ("rawKeyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent",
                      {"type": kind, "key": key, "code": code, "modifiers": modifiers,
                       "windowsVirtualKeyCode": key_code})
