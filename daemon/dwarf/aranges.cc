// Address ranges of units from .debug_aranges (aranges.h).
#include "daemon/dwarf/aranges.h"

#include <limits>
#include <string>

#include "daemon/dwarf/errors.h"

namespace jitsym::dwarf {
namespace {

// Reads the set that starts at `offset` and whose bytes (after the length) are `body`, starting
// `header_size` bytes after the set's first byte. Appends its ranges to `out` and returns true;
// on an error leaves `out` as it was and sets `error`.
bool ReadSet(std::string_view body, uint64_t offset, size_t header_size, uint8_t offset_size,
             ByteOrder order, Aranges* out, std::optional<Error>* error) {
  ByteReader r(body, order);
  const uint16_t version = r.U16();
  ArangeSet set;
  set.info_offset = r.Word(offset_size);
  set.address_size = r.U8();
  const uint8_t segment_size = r.U8();
  if (!r.ok()) {
    *error = Malformed("aranges", offset, "set header truncated");
    return false;
  }
  if (version != 2 && version != 3) {
    *error = DwarfError(ErrorKind::kUnsupported, "aranges", offset,
                        "version " + std::to_string(version) + " not read");
    return false;
  }
  if (segment_size != 0) {
    *error = DwarfError(ErrorKind::kUnsupported, "aranges", offset,
                        "segment selectors (" + std::to_string(segment_size) + " bytes) not read");
    return false;
  }
  const size_t a = set.address_size;
  if (a != 2 && a != 4 && a != 8) {
    *error = DwarfError(ErrorKind::kUnsupported, "aranges", offset,
                        "address size " + std::to_string(a) + " not read");
    return false;
  }
  // Tuples start at a multiple of their size, counted from the set's first byte.
  const size_t tuple = 2 * a;
  const size_t used = header_size + r.pos();
  r.Skip((tuple - used % tuple) % tuple);
  const size_t first = out->ranges.size();
  for (;;) {
    const uint64_t lo = r.Word(a);
    const uint64_t length = r.Word(a);
    if (!r.ok()) {
      out->ranges.resize(first);
      *error = Malformed("aranges", offset, "set without its terminating (0, 0) entry");
      return false;
    }
    if (lo == 0 && length == 0) break;
    if (length == 0) continue;
    if (length > std::numeric_limits<uint64_t>::max() - lo) {
      out->ranges.resize(first);
      *error = Malformed("aranges", offset,
                         "range at " + Hex(lo) + " of length " + Hex(length) + " wraps around");
      return false;
    }
    out->ranges.push_back({lo, lo + length});
  }
  set.first = static_cast<uint32_t>(first);
  set.count = static_cast<uint32_t>(out->ranges.size() - first);
  out->sets.push_back(set);
  return true;
}

}  // namespace

Aranges ReadAranges(std::string_view section, ByteOrder order) {
  Aranges out;
  auto fail = [&](std::optional<Error> e) {
    ++out.bad_sets;
    if (!out.first_error) out.first_error = std::move(e);
  };
  for (uint64_t offset = 0; offset < section.size();) {
    ByteReader r(section.substr(offset), order);
    uint8_t offset_size = 4;
    uint64_t length = r.U32();
    if (length == 0xffffffffu) {
      offset_size = 8;
      length = r.U64();
    } else if (length >= 0xfffffff0u) {
      fail(Malformed("aranges", offset, "reserved set length"));
      break;
    }
    if (!r.ok() || length > r.remaining()) {
      fail(Malformed("aranges", offset,
                     "set length " + std::to_string(length) + " past the section's end"));
      break;
    }
    // A range takes at least 4 bytes of the section: its indexes fit 32 bits.
    const size_t header = r.pos();
    std::optional<Error> error;
    if (!ReadSet(section.substr(offset + header, length), offset, header, offset_size, order, &out,
                 &error)) {
      fail(std::move(error));
    }
    offset += header + length;
  }
  return out;
}

}  // namespace jitsym::dwarf
