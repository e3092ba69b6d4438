// Mono log profiler files, uncompressed.
#include "daemon/ingest/mlpd_source.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  jitsym::ingest::MlpdSource source("/tmp/output.mlpd");
  jitsym::fuzz::FeedInChunks(source, data, size);
  (void)source.content_pid();
  return 0;
}
