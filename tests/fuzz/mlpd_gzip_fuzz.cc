// Mono log profiler files, gzip-compressed (mono's `zip` option). The input is compressed
// before feeding, so the fuzzer explores the parser behind the decompressor; an input whose
// first byte is odd is fed raw behind a gzip magic instead (corrupt streams).
#include <zlib.h>

#include <vector>

#include "daemon/ingest/mlpd_source.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<uint8_t> in;
  in.push_back(data[0]);  // the chunking seed
  if (data[0] & 1) {
    in.insert(in.end(), {0x1f, 0x8b, 0x08, 0x00});
    in.insert(in.end(), data + 1, data + size);
  } else {
    z_stream zs{};
    if (deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    std::vector<uint8_t> out(deflateBound(&zs, size) + 64);
    zs.next_in = const_cast<Bytef*>(data + 1);
    zs.avail_in = static_cast<uInt>(size - 1);
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    deflate(&zs, Z_FINISH);
    out.resize(zs.total_out);
    deflateEnd(&zs);
    in.insert(in.end(), out.begin(), out.end());
  }
  jitsym::ingest::MlpdSource source("/tmp/output.mlpd.gz");
  jitsym::fuzz::FeedInChunks(source, in.data(), in.size());
  return 0;
}
