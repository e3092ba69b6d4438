// jitdump files as the ingester reads them: parser and CodeMap together.
#include "daemon/ingest/jitdump_source.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  jitsym::ingest::JitdumpSource source("/tmp/jit-1.dump");
  jitsym::fuzz::FeedInChunks(source, data, size);
  return 0;
}
