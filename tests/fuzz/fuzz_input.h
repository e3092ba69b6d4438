// Splits a fuzzer input into the chunks a followed file would arrive in: the first byte seeds
// the chunk sizes, so the fuzzer explores incremental parsing (records cut anywhere) as well.
#ifndef JITSYM_TESTS_FUZZ_FUZZ_INPUT_H_
#define JITSYM_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "daemon/ingest/source.h"

namespace jitsym::fuzz {

inline void FeedInChunks(ingest::Source& source, const uint8_t* data, size_t size) {
  if (size == 0) return;
  uint32_t state = data[0] * 2654435761u + 1;
  ++data;
  --size;
  while (size > 0 && !source.failed()) {
    if (uint64_t skip = source.skippable(); skip > 0) {
      const size_t n = skip < size ? static_cast<size_t>(skip) : size;
      source.Skip(n);
      data += n;
      size -= n;
      continue;
    }
    state = state * 1103515245u + 12345u;
    size_t n = (state >> 16) % 512 + 1;
    if ((state & 3) == 0) n = size;  // often all at once
    if (n > size) n = size;
    source.Feed(std::span<const uint8_t>(data, n));
    data += n;
    size -= n;
  }
  // What the ingester does with a source after feeding: publish, compact, look up.
  auto snapshot = source.code().Publish();
  source.code().CompactAll();
  (void)source.code().Publish();
  (void)snapshot;
}

}  // namespace jitsym::fuzz

#endif  // JITSYM_TESTS_FUZZ_FUZZ_INPUT_H_
