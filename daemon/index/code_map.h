// The code of one source (one followed file, or one image): named, time-versioned ranges with
// optional line tables. A CodeMap is written by one thread (the ingester) and read through
// immutable CodeMapSnapshots by any number of threads, which never wait for the writer.
#ifndef JITSYM_DAEMON_INDEX_CODE_MAP_H_
#define JITSYM_DAEMON_INDEX_CODE_MAP_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "daemon/index/append_store.h"
#include "daemon/index/name_table.h"
#include "daemon/index/range_set.h"

namespace jitsym::index {

// One row of a function's line table: code at [offset, next row's offset) is at file:line:column.
struct LineEntry {
  uint32_t offset = 0;  // from the function's start
  uint32_t line = 0;
  uint32_t column = 0;
  uint32_t file = 0;  // a name id of the same CodeMap (CodeMap::Intern)
};

struct Symbol {
  std::string_view name;
  uint64_t start = 0;
  uint64_t size = 0;
  uint64_t loaded_at = 0;
  uint32_t range = 0;  // index of the range in its CodeMap
  std::string_view file;
  uint32_t line = 0;
  uint32_t column = 0;
};

// One definition of an address in a CodeMap over time (CodeMapSnapshot::History).
struct Definition {
  std::string_view name;  // empty for a removal
  bool removed = false;   // the code was moved away or unloaded: nothing is there
  uint64_t start = 0;
  uint64_t size = 0;
  uint64_t from = 0;           // answers lookups at times in [from, to)
  std::optional<uint64_t> to;  // nullopt: still
};

namespace internal {
struct DebugRef {
  uint32_t range;
  uint32_t first;
  uint32_t count;
};
struct CodeMapStorage {
  NameTable names;
  AppendStore<LineEntry, 10> lines;
  AppendStore<DebugRef> debug_refs;
};
}  // namespace internal

class CodeMapSnapshot {
 public:
  CodeMapSnapshot(std::shared_ptr<const internal::CodeMapStorage> storage,
                  std::shared_ptr<const RangeSetSnapshot> ranges, size_t debug_refs);

  // What was at addr at `time` (nullopt: now / last known).
  std::optional<Symbol> Find(uint64_t addr, std::optional<uint64_t> time) const;
  // Find for many addresses at one time; entries of out that hold a value are left alone.
  void FindBatch(const uint64_t* addrs, size_t n, std::optional<uint64_t> time,
                 std::optional<Symbol>* out) const;
  // Every definition that ever covered addr, in the order the source made them, with the
  // times each one answered (RangeSetSnapshot::History).
  std::vector<Definition> History(uint64_t addr) const;
  const RangeSetSnapshot& ranges() const { return *ranges_; }
  // The name of a range of this map (a LatestPiece's range, for instance).
  std::string_view name(const Range& range) const { return storage_->names.Get(range.payload); }

 private:
  Symbol MakeSymbol(const Found& found, uint64_t addr) const;

  std::shared_ptr<const internal::CodeMapStorage> storage_;
  std::shared_ptr<const RangeSetSnapshot> ranges_;
  size_t debug_refs_;
};

class CodeMap {
 public:
  CodeMap();

  uint32_t Intern(std::string_view name) { return storage_->names.Intern(name); }
  // Intern in two steps, for a stream of names: PrefetchName(h) a few names before
  // Intern(name, h), with h = NameTable::Hash(name).
  void PrefetchName(uint32_t hash) const { storage_->names.PrefetchSlot(hash); }
  uint32_t Intern(std::string_view name, uint32_t hash) {
    return storage_->names.Intern(name, hash);
  }
  // Hints: up to `ranges` ranges and about `names` distinct names are coming (RangeSet::Reserve,
  // NameTable::Reserve).
  void Reserve(size_t ranges, size_t names) {
    ranges_.Reserve(ranges);
    storage_->names.Reserve(names);
  }
  // Adds code named `name` at [start, start + size) valid from `time`. `lines` (sorted by
  // offset, offsets below size) becomes its line table. Returns the range index or kNoRange.
  uint32_t Add(uint64_t start, uint64_t size, uint64_t time, uint32_t name,
               std::span<const LineEntry> lines = {});
  // As Add, but `time` may be earlier than earlier ranges' (RangeSet::AddBackdated).
  uint32_t AddBackdated(uint64_t start, uint64_t size, uint64_t time, uint32_t name);
  // Marks [start, start + size) as holding nothing from `time` on.
  uint32_t Remove(uint64_t start, uint64_t size, uint64_t time);
  // As Remove, but `time` may be earlier than earlier ranges' (to withdraw a range added with
  // AddBackdated at that time).
  uint32_t RemoveBackdated(uint64_t start, uint64_t size, uint64_t time);

  std::shared_ptr<const CodeMapSnapshot> Publish();
  std::shared_ptr<const CodeMapSnapshot> CompactAll();

  const RangeSet& ranges() const { return ranges_; }
  NameTable& names_for_testing() { return storage_->names; }
  std::string_view name(uint32_t id) const { return storage_->names.Get(id); }
  size_t memory_bytes() const;
  size_t name_bytes() const { return storage_->names.name_bytes(); }

 private:
  std::shared_ptr<const CodeMapSnapshot> MakeSnapshot(std::shared_ptr<const RangeSetSnapshot> r);

  std::shared_ptr<internal::CodeMapStorage> storage_;
  RangeSet ranges_;
};

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_CODE_MAP_H_
