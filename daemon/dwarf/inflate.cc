// Bounded inflation of compressed debug sections (inflate.h).
#include "daemon/dwarf/inflate.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "daemon/dwarf/elf_image.h"

namespace jitsym::dwarf {
namespace {

// Inflates `stream` into exactly `size` bytes, after the checks of inflate.h.
Result<std::string> InflateExactly(std::string_view stream, uint64_t size, uint64_t header_size,
                                   Budget& budget) {
  if (size > MaxInflatedSize(stream.size())) {
    return MakeError(ErrorKind::kMalformed,
                     "compressed section claims " + std::to_string(size) + " bytes from " +
                         std::to_string(stream.size()) + ": more than deflate can produce",
                     0);
  }
  if (size > std::numeric_limits<size_t>::max() / 2) {
    return MakeError(ErrorKind::kLimit,
                     "compressed section claims " + std::to_string(size) + " bytes");
  }
  if (Status s = budget.ChargeInflated(size); !s.ok()) return std::move(s).error();
  std::string out(static_cast<size_t>(size), '\0');
  z_stream z{};
  if (inflateInit(&z) != Z_OK) {
    return MakeError(ErrorKind::kLimit, "zlib: inflateInit failed (out of memory)");
  }
  // One call per 1 GiB of input or output: zlib counts in 32 bits.
  constexpr uint64_t kChunk = uint64_t{1} << 30;
  uint64_t in_done = 0, out_done = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    const uint64_t in_left = stream.size() - in_done;
    const uint64_t out_left = size - out_done;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(stream.data() + in_done));
    z.avail_in = static_cast<uInt>(std::min(in_left, kChunk));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + out_done);
    z.avail_out = static_cast<uInt>(std::min(out_left, kChunk));
    const uInt in_before = z.avail_in, out_before = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    in_done += in_before - z.avail_in;
    out_done += out_before - z.avail_out;
    if (rc == Z_BUF_ERROR || (rc == Z_OK && in_before == z.avail_in && out_before == z.avail_out)) {
      break;  // no progress: input ended, or the output is full before the stream's end
    }
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || out_done != size) {
    return MakeError(
        ErrorKind::kMalformed,
        "compressed section: zlib stream " +
            std::string(rc == Z_STREAM_END ? "ends after " : "broken or longer than ") +
            std::to_string(out_done) + " of the " + std::to_string(size) + " bytes it claims",
        header_size + in_done);
  }
  return out;
}

}  // namespace

uint64_t MaxInflatedSize(uint64_t compressed) {
  // A deflate stored/fixed block cannot beat 1032:1; the zlib header and checksum add 6 bytes.
  constexpr uint64_t kRatio = 1032;
  if (compressed > std::numeric_limits<uint64_t>::max() / kRatio - 1) {
    return std::numeric_limits<uint64_t>::max();
  }
  return compressed * kRatio + 1024;
}

Result<std::string> InflateElfSection(std::string_view section, bool is64, ByteOrder order,
                                      Budget& budget) {
  ByteReader r(section, order);
  const uint32_t type = r.U32();
  uint64_t size = 0;
  if (is64) {
    r.U32();  // ch_reserved
    size = r.U64();
    r.U64();  // ch_addralign
  } else {
    size = r.U32();
    r.U32();  // ch_addralign
  }
  if (!r.ok()) return MakeError(ErrorKind::kMalformed, "compression header truncated", 0);
  if (type == kElfCompressZstd) {
    return MakeError(ErrorKind::kUnsupported,
                     "section compressed with zstd (ELFCOMPRESS_ZSTD): not read");
  }
  if (type != kElfCompressZlib) {
    return MakeError(ErrorKind::kUnsupported,
                     "section compression type " + std::to_string(type) + " unknown");
  }
  const size_t header = r.pos();
  return InflateExactly(section.substr(header), size, header, budget);
}

Result<std::string> InflateZdebugSection(std::string_view section, Budget& budget) {
  if (section.size() < 12 || std::memcmp(section.data(), "ZLIB", 4) != 0) {
    return MakeError(ErrorKind::kNotThisFormat, ".zdebug section without a ZLIB header");
  }
  ByteReader r(section.substr(4), ByteOrder::kBig);
  const uint64_t size = r.U64();
  return InflateExactly(section.substr(12), size, 12, budget);
}

}  // namespace jitsym::dwarf
