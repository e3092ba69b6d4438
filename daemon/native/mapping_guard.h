// Files the daemon maps for reading may shrink under it: whoever can write a file can truncate
// it, and a read of a mapped page past the new end raises SIGBUS, which would end the daemon.
// A MappingGuard registers one mapping; the daemon's SIGBUS handler replaces a faulting page of
// a registered mapping with a page of zeros and lets the read go on. Readers of mapped files
// already treat their bytes as hostile (daemon/dwarf/ checks every bound; zeros are one more
// malformed input), so the worst case is one module's answers read from zeros until the file is
// opened again (the module cache keys a file by size and mtime: a shrunken file is a new module).
// The first fault of each mapping logs one line with the file and the offset.
//
// A fault outside every registered mapping goes to the handler that was there before, or ends
// the process as SIGBUS always did.
#ifndef JITSYM_DAEMON_NATIVE_MAPPING_GUARD_H_
#define JITSYM_DAEMON_NATIVE_MAPPING_GUARD_H_

#include <cstddef>
#include <string_view>

namespace jitsym::native {

class MappingGuard {
 public:
  // Mappings registered at once, at most: Register fails beyond (the caller then copies).
  static constexpr int kSlots = 4096;

  MappingGuard() = default;
  MappingGuard(MappingGuard&& other) noexcept : slot_(other.slot_) { other.slot_ = -1; }
  MappingGuard& operator=(MappingGuard&& other) noexcept;
  ~MappingGuard() { Release(); }

  // Guards [start, start + size), a mapping of `file` (named in the log line). Installs the
  // handler on first use. An empty guard (!registered()) when every slot is taken.
  static MappingGuard Register(const void* start, size_t size, std::string_view file);

  bool registered() const { return slot_ >= 0; }
  // Pages of this mapping replaced by zeros so far.
  unsigned faults() const;
  // Stops guarding: call before the mapping is unmapped.
  void Release();

 private:
  int slot_ = -1;
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_MAPPING_GUARD_H_
