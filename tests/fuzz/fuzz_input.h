// Splits a fuzzer input into the chunks a followed file would arrive in: the first byte seeds
// the chunk sizes, so the fuzzer explores incremental parsing (records cut anywhere) as well.
// Then does what the ingester and the query side do with a source: publish (also between chunks,
// so runs are merged), compact, look addresses up and read every name and file name back, so
// that names interned from hostile input are read in full under ASan.
#ifndef JITSYM_TESTS_FUZZ_FUZZ_INPUT_H_
#define JITSYM_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "daemon/index/code_map.h"
#include "daemon/index/name_table.h"
#include "daemon/ingest/source.h"

namespace jitsym::fuzz {

// Every byte of s is read (ASan reports a name whose bytes are not all inside the arena).
inline void Touch(std::string_view s) {
  if (s.size() > index::NameTable::kMaxNameLength) std::abort();  // names are cut at 16 KiB
  volatile unsigned sum = 0;
  for (char c : s) sum = sum + static_cast<unsigned char>(c);
  (void)sum;
}

// Looks up the first, last and middle byte of every piece of the flattened map (bounded), one by
// one and in a batch, and checks that the answer is the piece's own range.
inline void LookUpEverything(const index::CodeMapSnapshot& snapshot) {
  constexpr size_t kMaxPieces = 256;
  std::vector<index::LatestPiece> pieces = snapshot.ranges().Latest();
  if (pieces.size() > kMaxPieces) pieces.resize(kMaxPieces);
  std::vector<uint64_t> addrs;
  for (const index::LatestPiece& p : pieces) {
    if (p.start >= p.end || p.range == nullptr) std::abort();
    const uint64_t probes[] = {p.start, p.end - 1, p.start + (p.end - p.start) / 2};
    for (uint64_t addr : probes) {
      addrs.push_back(addr);
      const std::optional<index::Symbol> sym = snapshot.Find(addr, std::nullopt);
      if (p.range->payload == index::kTombstone) {
        if (sym) std::abort();
        continue;
      }
      if (!sym || sym->start != p.range->start || sym->name != snapshot.name(*p.range)) {
        std::abort();
      }
      Touch(sym->name);
      Touch(sym->file);
      // The same address at the range's own time, and just before it (a copy: Range is packed).
      const uint64_t time = p.range->time;
      if (auto at = snapshot.Find(addr, time)) Touch(at->name);
      if (time > 0) (void)snapshot.Find(addr, time - 1);
    }
  }
  // A few addresses the map does not hold, next to the pieces.
  if (!pieces.empty()) {
    addrs.push_back(pieces.front().start - 1);
    addrs.push_back(pieces.back().end);
  }
  std::vector<std::optional<index::Symbol>> out(addrs.size());
  snapshot.FindBatch(addrs.data(), addrs.size(), std::nullopt, out.data());
  for (const auto& sym : out) {
    if (sym) Touch(sym->name);
  }
}

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
    // Mostly small chunks; now and then a large one, so that a long record or line arrives
    // whole as well as cut into pieces.
    size_t n = (state >> 16) % 512 + 1;
    if ((state & 0x30) == 0) n = (state >> 8) % (1u << 20) + 1;
    if ((state & 3) == 0) n = size;  // often all at once
    if (n > size) n = size;
    source.Feed(std::span<const uint8_t>(data, n));
    data += n;
    size -= n;
    // The ingester publishes after every read; here every so often, so that runs are merged.
    if ((state & 0x300) == 0) (void)source.code().Publish();
    // The file stops growing now and then, mid-line: the unfinished line is indexed, to be
    // replaced or withdrawn by the bytes that complete it.
    if ((state & 0xc00) == 0) (void)source.Settle();
  }
  (void)source.Settle();  // finished: as the ingester does before Release
  // What the ingester does with a source after feeding: publish, compact, look up.
  auto snapshot = source.code().Publish();
  LookUpEverything(*snapshot);
  source.code().CompactAll();
  LookUpEverything(*source.code().Publish());
  LookUpEverything(*snapshot);  // an older snapshot stays valid
  for (const auto& run : source.code().ranges().runs_for_testing()) {
    if (!run->CheckInvariants()) std::abort();
  }
}

}  // namespace jitsym::fuzz

#endif  // JITSYM_TESTS_FUZZ_FUZZ_INPUT_H_
