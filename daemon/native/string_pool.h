// The strings of one module's DWARF tables (function names, file paths), each text stored once
// for the whole module rather than once per compilation unit that mentions it.
//
// Why: a header's functions and paths appear in hundreds of CUs. Stored per CU, one answer that
// crosses many CUs carries the same text under many addresses; the binary and compact answers
// send each string once per address (proto/string_interner.h), so they send it many times, and
// reading those copies scattered across the heap is where answering frames spends its cache
// misses. Stored once, in large contiguous chunks, the same text is the same pointer.
//
// Thread-safe: CUs are built on several threads at once (cu_index.h). The texts are stored in
// the module's TableArena: views stay valid as long as the module lives.
#ifndef JITSYM_DAEMON_NATIVE_STRING_POOL_H_
#define JITSYM_DAEMON_NATIVE_STRING_POOL_H_

#include <cstddef>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace jitsym::native {

class TableArena;

class StringPool {
 public:
  explicit StringPool(TableArena* arena) : arena_(arena) {}
  // The pool's copy of each text of `texts` (stored now if new), in order, as an array in the
  // arena; under one lock.
  std::span<const std::string_view> InternAll(const std::vector<std::string>& texts);
  std::string_view Intern(std::string_view text);
  // Bytes held by the set over the texts (the texts are the arena's).
  size_t Bytes() const;

 private:
  std::string_view InternLocked(std::string_view text);

  TableArena* arena_;
  mutable std::mutex mu_;
  std::unordered_set<std::string_view> set_;
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_STRING_POOL_H_
