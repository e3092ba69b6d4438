// perf-<pid>.map files as the ingester reads them, and single lines.
#include <string_view>

#include "daemon/formats/perfmap/perfmap_parser.h"
#include "daemon/ingest/perfmap_source.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  jitsym::ingest::SourceContext context;
  context.discovered_ns = 1000;
  context.initial_size = size / 2;
  uint64_t now = 2000;
  jitsym::ingest::PerfmapSource source("/tmp/perf-1.map", context, [&now] { return ++now; });
  jitsym::fuzz::FeedInChunks(source, data, size);
  std::optional<jitsym::perfmap::LineError> error;
  (void)jitsym::perfmap::ParseLine(std::string_view(reinterpret_cast<const char*>(data), size),
                                   &error);
  return 0;
}
