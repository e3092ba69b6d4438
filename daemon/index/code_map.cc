#include "daemon/index/code_map.h"

#include <algorithm>

namespace jitsym::index {

CodeMapSnapshot::CodeMapSnapshot(std::shared_ptr<const internal::CodeMapStorage> storage,
                                 std::shared_ptr<const RangeSetSnapshot> ranges, size_t debug_refs)
    : storage_(std::move(storage)), ranges_(std::move(ranges)), debug_refs_(debug_refs) {}

std::optional<Symbol> CodeMapSnapshot::Find(uint64_t addr, std::optional<uint64_t> time) const {
  const Found found = ranges_->Find(addr, time);
  if (!found || found.range->payload == kTombstone) return std::nullopt;
  return MakeSymbol(found, addr);
}

void CodeMapSnapshot::FindBatch(const uint64_t* addrs, size_t n, std::optional<uint64_t> time,
                                std::optional<Symbol>* out) const {
  // Entries already answered are marked with a placeholder so the range search skips them.
  static const Range kAnswered{};
  thread_local std::vector<Found> found;
  found.assign(n, Found{});
  for (size_t i = 0; i < n; ++i) {
    if (out[i]) found[i].range = &kAnswered;
  }
  ranges_->FindBatch(addrs, n, time, found.data());
  for (size_t i = 0; i < n; ++i) {
    if (found[i].range != &kAnswered && found[i] && found[i].range->payload != kTombstone) {
      storage_->names.Prefetch(found[i].range->payload);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (found[i].range != &kAnswered && found[i] && found[i].range->payload != kTombstone) {
      out[i] = MakeSymbol(found[i], addrs[i]);
      __builtin_prefetch(out[i]->name.data());  // the caller copies the name next
    }
  }
}

std::vector<Definition> CodeMapSnapshot::History(uint64_t addr) const {
  std::vector<Definition> out;
  for (const Validity& v : ranges_->History(addr)) {
    Definition& d = out.emplace_back();
    d.removed = v.range->payload == kTombstone;
    if (!d.removed) d.name = storage_->names.Get(v.range->payload);
    d.start = v.range->start;
    d.size = v.range->size;
    d.from = v.from;
    d.to = v.to;
  }
  return out;
}

Symbol CodeMapSnapshot::MakeSymbol(const Found& found, uint64_t addr) const {
  const Range& r = *found.range;
  const uint32_t index = found.seq;
  Symbol s;
  s.name = storage_->names.Get(r.payload);
  s.start = r.start;
  s.size = r.size;
  s.loaded_at = r.time;
  s.range = index;
  if (!r.marked) return s;  // no line table
  // Line table: refs are appended in range order, so binary search by range.
  const auto& refs = storage_->debug_refs;
  size_t lo = 0, hi = debug_refs_;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (refs[mid].range < index) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < debug_refs_ && refs[lo].range == index) {
    const internal::DebugRef ref = refs[lo];
    const auto offset = static_cast<uint32_t>(addr - r.start);
    // Last row whose offset is <= the address's offset.
    uint32_t a = 0, b = ref.count;
    while (a < b) {
      const uint32_t mid = a + (b - a) / 2;
      if (storage_->lines[ref.first + mid].offset <= offset) {
        a = mid + 1;
      } else {
        b = mid;
      }
    }
    if (a > 0) {
      const LineEntry& e = storage_->lines[ref.first + a - 1];
      s.file = storage_->names.Get(e.file);
      s.line = e.line;
      s.column = e.column;
    }
  }
  return s;
}

CodeMap::CodeMap() : storage_(std::make_shared<internal::CodeMapStorage>()) {}

uint32_t CodeMap::Add(uint64_t start, uint64_t size, uint64_t time, uint32_t name,
                      std::span<const LineEntry> lines) {
  const bool has_lines = !lines.empty() && lines.size() < std::numeric_limits<uint32_t>::max();
  const uint32_t index = ranges_.Add(start, size, time, name, has_lines);
  if (index == kNoRange) return index;
  if (has_lines) {
    const auto first = static_cast<uint32_t>(storage_->lines.size());
    for (const LineEntry& e : lines) storage_->lines.Append(e);
    storage_->debug_refs.Append({index, first, static_cast<uint32_t>(lines.size())});
  }
  return index;
}

uint32_t CodeMap::AddBackdated(uint64_t start, uint64_t size, uint64_t time, uint32_t name) {
  return ranges_.AddBackdated(start, size, time, name);
}

uint32_t CodeMap::Remove(uint64_t start, uint64_t size, uint64_t time) {
  return ranges_.Add(start, size, time, kTombstone);
}

uint32_t CodeMap::RemoveBackdated(uint64_t start, uint64_t size, uint64_t time) {
  return ranges_.AddBackdated(start, size, time, kTombstone);
}

std::shared_ptr<const CodeMapSnapshot> CodeMap::Publish() {
  return MakeSnapshot(ranges_.Publish());
}
std::shared_ptr<const CodeMapSnapshot> CodeMap::CompactAll() {
  return MakeSnapshot(ranges_.CompactAll());
}

std::shared_ptr<const CodeMapSnapshot> CodeMap::MakeSnapshot(
    std::shared_ptr<const RangeSetSnapshot> r) {
  return std::make_shared<const CodeMapSnapshot>(storage_, std::move(r),
                                                 storage_->debug_refs.size());
}

size_t CodeMap::memory_bytes() const {
  return ranges_.memory_bytes() + storage_->names.memory_bytes() + storage_->lines.memory_bytes() +
         storage_->debug_refs.memory_bytes();
}

}  // namespace jitsym::index
