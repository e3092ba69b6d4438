// The strings of one module's DWARF tables (function names, file paths), each text stored once
// for the whole module rather than once per compilation unit that mentions it.
//
// Why: a header's functions and paths appear in hundreds of CUs. Stored per CU, one answer that
// crosses many CUs carries the same text stored in many places; the binary and compact answers
// send a string once per place it is stored (proto/string_interner.h keys by pointer), so they
// send it many times, and
// reading those copies scattered across the heap is where answering frames spends its cache
// misses. Stored once, in large contiguous chunks, the same text is the same pointer.
//
// Thread-safe: CUs are built on several threads at once (cu_index.h). Views stay valid as long
// as the pool lives (the module): chunks are never moved or freed before it.
#ifndef JITSYM_DAEMON_NATIVE_STRING_POOL_H_
#define JITSYM_DAEMON_NATIVE_STRING_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::native {

class StringPool {
 public:
  // Replaces each string of `texts` by the pool's copy of its text (stored now if new), in
  // `out` (same order), under one lock.
  void InternAll(const std::vector<std::string_view>& texts, std::vector<std::string_view>* out);
  std::string_view Intern(std::string_view text);
  // Bytes held: the chunks and the set over them.
  size_t Bytes() const;

 private:
  std::string_view InternLocked(std::string_view text);
  void Grow();

  static constexpr size_t kChunkBytes = 256 * 1024;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<char[]>> chunks_;      // texts packed, kChunkBytes each
  std::vector<std::unique_ptr<char[]>> long_texts_;  // one text each
  size_t chunk_left_ = 0;                            // free bytes at the end of chunks_.back()
  char* chunk_next_ = nullptr;
  size_t bytes_ = 0;  // allocated chunk bytes
  // Open addressing over the stored texts, by content (hash kept beside each view).
  struct Slot {
    uint64_t hash = 0;
    const char* data = nullptr;  // null: empty
    size_t size = 0;
  };
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_STRING_POOL_H_
