"""An independent jitdump writer and reader for the integration tests.

Written from the perf specification (tools/perf/Documentation/jitdump-specification.txt), not
from the daemon's parser, so the two can disagree and a test can notice.

    file   := header record*
    header := magic u32 (0x4A695444), version u32, total_size u32, elf_mach u32, pad1 u32,
              pid u32, timestamp u64, flags u64                                  (40 bytes)
    record := id u32, total_size u32, timestamp u64, payload
      LOAD   (0): pid u32, tid u32, vma u64, code_addr u64, code_size u64, code_index u64,
                  name (NUL-terminated), code bytes
      MOVE   (1): pid u32, tid u32, vma u64, old_code_addr u64, new_code_addr u64,
                  code_size u64, code_index u64
      DEBUG  (2): code_addr u64, nr_entry u64, entry* (addr u64, line u32, discrim u32, name NUL)
      CLOSE  (3): nothing
      UNWIND (4): unwind_data_size u64, eh_frame_hdr_size u64, mapped_size u64, data

Byte order is the writer's: a reader detects it from the magic. V8 marks its files with
pad1 == 0xDEADBEEF and writes debug-entry addresses 0x40 past the real code address.
"""

import struct

MAGIC = 0x4A695444
HEADER_SIZE = 40
RECORD_HEADER_SIZE = 16
V8_PAD1 = 0xDEADBEEF
V8_DEBUG_ADDR_BIAS = 0x40

LOAD, MOVE, DEBUG_INFO, CLOSE, UNWINDING_INFO = 0, 1, 2, 3, 4
RECORD_NAMES = {LOAD: "LOAD", MOVE: "MOVE", DEBUG_INFO: "DEBUG_INFO", CLOSE: "CLOSE",
                UNWINDING_INFO: "UNWINDING_INFO"}

EM_X86_64 = 62


class Writer:
    """Builds jitdump bytes. Each method returns the bytes of one header or record, so a test can
    write a file in one go or append it record by record (or byte by byte)."""

    def __init__(self, pid, big_endian=False, elf_mach=EM_X86_64, pad1=0, flags=0,
                 header_total_size=HEADER_SIZE, version=1, tid=None):
        self.pid = pid
        self.tid = pid if tid is None else tid
        self.order = ">" if big_endian else "<"
        self.elf_mach = elf_mach
        self.pad1 = pad1
        self.flags = flags
        self.header_total_size = header_total_size
        self.version = version

    def _p(self, fmt, *values):
        return struct.pack(self.order + fmt, *values)

    def header(self, timestamp):
        """The 40-byte header; when header_total_size > 40 the extra bytes (0xAB) follow it, as a
        newer writer would add fields. A total_size below 40 is written as is (old Mono wrote 8)
        but the header still occupies 40 bytes."""
        data = self._p("IIIIIIQQ", MAGIC, self.version, self.header_total_size, self.elf_mach,
                       self.pad1, self.pid, timestamp, self.flags)
        if self.header_total_size > HEADER_SIZE:
            data += b"\xab" * (self.header_total_size - HEADER_SIZE)
        return data

    def record(self, rec_id, timestamp, payload, total_size=None):
        size = RECORD_HEADER_SIZE + len(payload) if total_size is None else total_size
        return self._p("IIQ", rec_id, size, timestamp) + payload

    def load(self, timestamp, code_addr, code_size, name, code_index, vma=None, code=None,
             name_nul=True, total_size=None):
        if code is None:
            code = bytes((0xCC,)) * code_size
        name_bytes = name.encode() if isinstance(name, str) else name
        if name_nul:
            name_bytes += b"\0"
        payload = self._p("IIQQQQ", self.pid, self.tid, code_addr if vma is None else vma,
                          code_addr, code_size, code_index) + name_bytes + code
        return self.record(LOAD, timestamp, payload, total_size)

    def unknown(self, timestamp, rec_id, payload):
        """A record with an id the spec does not define: readers skip it by its size."""
        return self.record(rec_id, timestamp, payload)

    def move(self, timestamp, old_code_addr, new_code_addr, code_size, code_index, vma=None):
        payload = self._p("IIQQQQQ", self.pid, self.tid,
                          new_code_addr if vma is None else vma, old_code_addr, new_code_addr,
                          code_size, code_index)
        return self.record(MOVE, timestamp, payload)

    def debug_info(self, timestamp, code_addr, entries):
        """entries: (addr, line, discrim, file_name) with addr as the writer would store it
        (a V8 writer adds 0x40 itself; this method writes what it is given)."""
        payload = self._p("QQ", code_addr, len(entries))
        for addr, line, discrim, file_name in entries:
            payload += self._p("QII", addr, line, discrim) + file_name.encode() + b"\0"
        return self.record(DEBUG_INFO, timestamp, payload)

    def close(self, timestamp):
        return self.record(CLOSE, timestamp, b"")

    def unwinding_info(self, timestamp, unwind_data, eh_frame_hdr_size, mapped_size=None):
        mapped = len(unwind_data) if mapped_size is None else mapped_size
        payload = self._p("QQQ", len(unwind_data), eh_frame_hdr_size, mapped) + unwind_data
        # The unwinding data is padded to 8 bytes by real writers (V8); the record size covers it.
        payload += b"\0" * (-len(payload) % 8)
        return self.record(UNWINDING_INFO, timestamp, payload)


class Record:
    """One parsed record, host order. Fields depend on kind; `offset` is its byte offset in the
    file, `ts` its raw timestamp and `eff_ts` the running maximum of timestamps in file order."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if k != "entries")
        return f"Record({fields})"


class Dump:
    def __init__(self):
        self.big_endian = False
        self.version = 0
        self.header_total_size = 0
        self.elf_mach = 0
        self.pad1 = 0
        self.pid = 0
        self.timestamp = 0
        self.flags = 0
        self.records = []
        self.error = None          # text, when a corrupt record stopped the parse
        self.error_offset = None   # its byte offset
        self.consumed = 0          # bytes parsed (the start of an incomplete tail, if any)

    @property
    def is_v8(self):
        return self.pad1 == V8_PAD1

    def loads(self):
        return [r for r in self.records if r.kind == LOAD]


MAX_RECORD_SIZE = 1 << 30  # a sane bound; real records are far smaller


def parse(data):
    """Parses as many complete records as `data` holds. Stops quietly at an incomplete tail and
    with dump.error set at a corrupt record. Returns None if data is not (yet) a jitdump."""
    if len(data) < HEADER_SIZE:
        return None
    magic_le = struct.unpack_from("<I", data, 0)[0]
    if magic_le == MAGIC:
        order = "<"
    elif struct.unpack_from(">I", data, 0)[0] == MAGIC:
        order = ">"
    else:
        return None
    d = Dump()
    d.big_endian = order == ">"
    (_, d.version, d.header_total_size, d.elf_mach, d.pad1, d.pid, d.timestamp,
     d.flags) = struct.unpack_from(order + "IIIIIIQQ", data, 0)
    pos = max(d.header_total_size, HEADER_SIZE)
    if pos > len(data):
        d.consumed = 0
        return d
    running = 0
    pending_debug = None
    while pos + RECORD_HEADER_SIZE <= len(data):
        rec_id, size, ts = struct.unpack_from(order + "IIQ", data, pos)
        if size < RECORD_HEADER_SIZE or size > MAX_RECORD_SIZE:
            d.error, d.error_offset = f"record size {size}", pos
            break
        if pos + size > len(data):
            break  # incomplete: wait for the writer
        body = data[pos + RECORD_HEADER_SIZE:pos + size]
        running = max(running, ts)
        rec = Record(kind=rec_id, offset=pos, size=size, ts=ts, eff_ts=running)
        err = _parse_body(order, rec, body)
        if err:
            d.error, d.error_offset = err, pos
            break
        if rec_id == DEBUG_INFO:
            pending_debug = rec
        elif rec_id == LOAD:
            rec.debug = pending_debug
            pending_debug = None
        d.records.append(rec)
        pos += size
    d.consumed = pos
    return d


def _cstring(body, start):
    end = body.find(b"\0", start)
    if end < 0:
        return None, None
    return body[start:end].decode("utf-8", "replace"), end + 1


def _parse_body(order, rec, body):
    if rec.kind == LOAD:
        if len(body) < 40:
            return "LOAD too short"
        (rec.pid, rec.tid, rec.vma, rec.code_addr, rec.code_size,
         rec.code_index) = struct.unpack_from(order + "IIQQQQ", body, 0)
        rec.name, after = _cstring(body, 40)
        if rec.name is None:
            return "LOAD name without NUL"
        if rec.code_size > len(body) - after:
            return "LOAD code_size beyond record"
    elif rec.kind == MOVE:
        if len(body) < 48:
            return "MOVE too short"
        (rec.pid, rec.tid, rec.vma, rec.old_code_addr, rec.new_code_addr, rec.code_size,
         rec.code_index) = struct.unpack_from(order + "IIQQQQQ", body, 0)
    elif rec.kind == DEBUG_INFO:
        if len(body) < 16:
            return "DEBUG_INFO too short"
        rec.code_addr, count = struct.unpack_from(order + "QQ", body, 0)
        rec.entries = []
        pos = 16
        # A debug entry that runs past its record spoils only this record's line table, not the
        # file (node 20 writes such records for some scripts): keep what parsed, mark the rest.
        rec.malformed = False
        for _ in range(count):
            if pos + 16 > len(body):
                rec.malformed = True
                break
            addr, line, discrim = struct.unpack_from(order + "QII", body, pos)
            name, after = _cstring(body, pos + 16)
            if name is None:
                rec.malformed = True
                break
            pos = after
            rec.entries.append((addr, line, discrim, name))
        # Entries with garbage names (embedded NULs) leave bytes over at the end of the record;
        # records are padded to at most 8 bytes.
        if not rec.malformed and (len(body) - pos >= 8 or
                                  any(not n.isprintable() for _, _, _, n in rec.entries)):
            rec.malformed = True
    elif rec.kind == UNWINDING_INFO:
        if len(body) < 24:
            return "UNWINDING_INFO too short"
        (rec.unwind_data_size, rec.eh_frame_hdr_size,
         rec.mapped_size) = struct.unpack_from(order + "QQQ", body, 0)
        if rec.unwind_data_size > len(body) - 24 or rec.eh_frame_hdr_size > rec.unwind_data_size:
            return "UNWINDING_INFO sizes beyond record"
    return None


def read_file(path):
    with open(path, "rb") as f:
        return parse(f.read())
