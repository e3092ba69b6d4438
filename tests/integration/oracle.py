"""A brute-force model of what jitsymd must answer for one jitdump file (one incarnation).

The contract, in the words the tests check:
  * Records are taken in file order. A record's effective timestamp is the running maximum of
    the timestamps of all records so far, so a stamp that goes backwards is clamped.
  * A LOAD of [code_addr, code_addr+code_size) is valid from its effective timestamp on.
  * A MOVE of code_index K places K's function at new_code_addr from the MOVE's effective
    timestamp on; the old location is no longer valid from that moment.
  * At time T, address A resolves to the placement valid at T (valid_from <= T < valid_until)
    that comes last in file order among those covering A. Without a time: the ones still valid.
  * A DEBUG_INFO record belongs to the LOAD that follows it. A V8 file (pad1 == 0xDEADBEEF)
    stores entry addresses 0x40 past the code address; the source position of A is the entry
    with the largest adjusted address <= A.
  * Zero-size LOADs cover nothing.

No cleverness beyond bucketing placements by page, so that it is obviously right and still fast
enough for dumps with tens of thousands of LOADs.
"""

import jitdump

PAGE_SHIFT = 12
MAX_BUCKETED_PAGES = 1 << 12  # larger placements go to a list checked on every lookup


class Placement:
    __slots__ = ("start", "end", "name", "order", "valid_from", "valid_until", "debug", "record")

    def __init__(self, start, size, name, order, valid_from, debug, record):
        self.start = start
        self.end = start + size
        self.name = name
        self.order = order
        self.valid_from = valid_from
        self.valid_until = None  # None: still valid
        self.debug = debug
        self.record = record

    def valid_at(self, t):
        if t is None:
            return self.valid_until is None
        return self.valid_from <= t and (self.valid_until is None or t < self.valid_until)


class Oracle:
    def __init__(self, dump):
        self.dump = dump
        self.placements = []
        self.by_record = {}  # id(LOAD record) -> its placement
        self._pages = {}
        self._big = []
        by_index = {}
        for order, rec in enumerate(dump.records):
            if rec.kind == jitdump.LOAD:
                if rec.code_size == 0:
                    by_index.pop(rec.code_index, None)
                    continue
                debug = rec.debug if rec.debug is not None and not rec.debug.malformed else None
                p = Placement(rec.code_addr, rec.code_size, rec.name, order, rec.eff_ts, debug, rec)
                self._add(p)
                self.by_record[id(rec)] = p
                by_index[rec.code_index] = p
            elif rec.kind == jitdump.MOVE:
                old = by_index.get(rec.code_index)
                if old is None or rec.code_size == 0:
                    continue
                if old.valid_until is None:
                    old.valid_until = rec.eff_ts
                p = Placement(rec.new_code_addr, rec.code_size, old.name, order, rec.eff_ts, None,
                              rec)
                self._add(p)
                by_index[rec.code_index] = p

    def _add(self, p):
        self.placements.append(p)
        first, last = p.start >> PAGE_SHIFT, (p.end - 1) >> PAGE_SHIFT
        if last - first >= MAX_BUCKETED_PAGES:
            self._big.append(p)
            return
        for page in range(first, last + 1):
            self._pages.setdefault(page, []).append(p)

    def lookup(self, addr, t=None):
        """The placement that answers addr at time t (None: now), or None."""
        best = None
        for p in reversed(self._pages.get(addr >> PAGE_SHIFT, ())):
            if p.start <= addr < p.end and p.valid_at(t):
                best = p
                break
        for p in self._big:
            if p.start <= addr < p.end and p.valid_at(t) and (best is None or p.order > best.order):
                best = p
        return best

    def source_position(self, placement, addr):
        """(file, line, column) for addr inside placement, None when there is no entry at or
        below addr, or "ambiguous" when several entries share the deciding address."""
        if placement is None or placement.debug is None:
            return None
        bias = jitdump.V8_DEBUG_ADDR_BIAS if self.dump.is_v8 else 0
        best_addr, best = None, []
        for e_addr, line, discrim, file_name in placement.debug.entries:
            adj = e_addr - bias
            if adj > addr:
                continue
            if best_addr is None or adj > best_addr:
                best_addr, best = adj, [(file_name, line, discrim)]
            elif adj == best_addr:
                best.append((file_name, line, discrim))
        if not best:
            return None
        if len(set((f, l) for f, l, _ in best)) > 1:
            return "ambiguous"
        return best[0]


def overlap_count(loads):
    """How many LOADs (size > 0, in file order) overlap the range of some earlier LOAD."""
    import bisect
    starts, ends = [], []  # disjoint merged intervals of everything loaded so far
    count = 0
    for rec in loads:
        if rec.code_size == 0:
            continue
        s, e = rec.code_addr, rec.code_addr + rec.code_size
        i = bisect.bisect_right(starts, s) - 1
        if (i >= 0 and ends[i] > s) or (i + 1 < len(starts) and starts[i + 1] < e):
            count += 1
        # merge [s, e) into the interval list
        lo = bisect.bisect_left(ends, s)     # first interval that ends at or after s
        hi = bisect.bisect_right(starts, e)  # intervals starting after e stay
        if lo < hi:
            s, e = min(s, starts[lo]), max(e, ends[hi - 1])
        starts[lo:hi] = [s]
        ends[lo:hi] = [e]
    return count
