// gzip for pprof profiles (stored gzip'd on disk, profile.proto says so): zlib, with the
// inflated size bounded by the caller so that a gzip bomb stops at the limit.
#include <zlib.h>

#include <algorithm>
#include <new>

#include "client/profile_proto.h"

namespace jitsym::client::pprof {

std::string Gzip(std::string_view bytes) {
  z_stream z{};
  // 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::bad_alloc();
  }
  std::string out;
  char buf[64 * 1024];
  size_t pos = 0;
  int rc;
  do {
    const size_t chunk = std::min<size_t>(bytes.size() - pos, 1u << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + pos));
    z.avail_in = static_cast<uInt>(chunk);
    pos += chunk;
    const int flush = pos == bytes.size() ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof(buf);
      rc = deflate(&z, flush);
      out.append(buf, sizeof(buf) - z.avail_out);
    } while (z.avail_out == 0);
  } while (rc != Z_STREAM_END);
  deflateEnd(&z);
  return out;
}

Result<std::string> MaybeGunzip(std::string_view bytes, size_t max_out) {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f ||
      static_cast<unsigned char>(bytes[1]) != 0x8b) {
    if (bytes.size() > max_out) {
      return MakeError(ErrorKind::kLimit, "profile of " + std::to_string(bytes.size()) +
                                              " bytes is over the limit of " +
                                              std::to_string(max_out));
    }
    return std::string(bytes);
  }
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw std::bad_alloc();
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  std::string out;
  // Profiles inflate 3 to 10 times; reserving saves most of the doubling copies.
  out.reserve(std::min(max_out, bytes.size() * 4));
  char buf[64 * 1024];
  size_t pos = 0;  // input consumed
  auto refill = [&] {
    const size_t chunk = std::min<size_t>(bytes.size() - pos, 1u << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + pos));
    z.avail_in = static_cast<uInt>(chunk);
    pos += chunk;
  };
  auto offset = [&] { return static_cast<uint64_t>(pos - z.avail_in); };
  refill();
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    const int rc = inflate(&z, Z_NO_FLUSH);
    const size_t have = sizeof(buf) - z.avail_out;
    if (have > max_out - out.size()) {
      return MakeError(ErrorKind::kLimit,
                       "gzip stream inflates to more than " + std::to_string(max_out) + " bytes",
                       offset());
    }
    out.append(buf, have);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0 && pos < bytes.size()) refill();
      if (z.avail_in == 0) return out;
      // Another member follows (gzip files may be concatenated), or bytes that are not one.
      if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) {
        return MakeError(ErrorKind::kMalformed, "bytes after the end of the gzip stream", offset());
      }
      inflateReset(&z);
      continue;
    }
    if (rc == Z_OK) {
      if (z.avail_in == 0 && pos < bytes.size()) refill();
      continue;
    }
    if (rc == Z_BUF_ERROR) {
      if (z.avail_in == 0 && pos < bytes.size()) {
        refill();
        continue;
      }
      // The input ended before the stream did.
      return MakeError(ErrorKind::kMalformed, "truncated gzip stream", offset());
    }
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    return MakeError(
        ErrorKind::kMalformed,
        std::string("bad gzip stream: ") + (z.msg != nullptr ? z.msg : "inflate failed"), offset());
  }
}

}  // namespace jitsym::client::pprof
