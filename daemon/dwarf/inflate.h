// Compressed debug sections, inflated within bounds: SHF_COMPRESSED sections (an ELF
// compression header, then a zlib stream: ELFCOMPRESS_ZLIB) and GNU .zdebug_* sections ("ZLIB",
// the size as 8 big-endian bytes, then a zlib stream). ELFCOMPRESS_ZSTD is refused as
// unsupported (the library links zlib only).
//
// A section says how big it is once inflated; that claim decides the allocation, so it is
// checked before a byte is allocated:
//  - against what deflate can produce from the compressed bytes (at most 1032 to 1, the format's
//    own limit: a larger claim is malformed, whatever the budget);
//  - against what is left of the caller's budget (Budget::ChargeInflated: a larger claim is
//    refused as kLimit, and nothing is spent).
// The stream must then produce exactly the claimed size: more or less is malformed.
#ifndef JITSYM_DAEMON_DWARF_INFLATE_H_
#define JITSYM_DAEMON_DWARF_INFLATE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/dwarf/budget.h"
#include "daemon/util/byte_reader.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

// The most bytes a deflate stream of `compressed` bytes can inflate to (about 1032 to 1, with
// room for the stream's header and end).
uint64_t MaxInflatedSize(uint64_t compressed);

// The bytes of an SHF_COMPRESSED section (its compression header first), inflated.
Result<std::string> InflateElfSection(std::string_view section, bool is64, ByteOrder order,
                                      Budget& budget);

// The bytes of a .zdebug_* section ("ZLIB" + size + stream), inflated. kNotThisFormat when the
// section does not start with "ZLIB" (binutils then stored it uncompressed).
Result<std::string> InflateZdebugSection(std::string_view section, Budget& budget);

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_INFLATE_H_
