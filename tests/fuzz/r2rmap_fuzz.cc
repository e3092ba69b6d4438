// ReadyToRun maps (.ni.r2rmap with a header; crossgen1's headerless .ni.{MVID}.map).
#include "daemon/ingest/r2rmap_source.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const bool legacy = size > 0 && (data[0] & 0x80) != 0;
  jitsym::ingest::R2rmapSource source("/tmp/System.Private.CoreLib.ni.r2rmap",
                                      legacy ? "0123456789abcdef0123456789abcdef" : std::string());
  jitsym::fuzz::FeedInChunks(source, data, size);
  (void)source.image_signature();
  return 0;
}
