// The strings of one lookup answer, each sent once: shared by the compact JSON form
// ("strings":true) and the binary answer encoding, which both refer to a string by its index in
// a per-answer (per-frame) table.
//
// Keyed by where the bytes are (data pointer and size), not by content: answers borrow their
// names, file names and paths from the index and the native modules, so a string that repeats
// across answers is the same bytes each time, and interning costs a hash of two words instead
// of a pass over the text. A string owned by one result gets its own entry; equal strings at
// different addresses (a header's name in two compilation units) are sent twice, which is
// correct, merely not minimal.
#ifndef JITSYM_PROTO_STRING_INTERNER_H_
#define JITSYM_PROTO_STRING_INTERNER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace jitsym::proto {

class StringInterner {
 public:
  struct Entry {
    uint32_t index;
    bool added;  // first time this string was seen: the encoder sends its bytes
  };
  Entry Intern(std::string_view s) {
    if (2 * (strings_.size() + 1) > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(s) & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.index == kEmpty) {
        slot = {s.data(), s.size(), static_cast<uint32_t>(strings_.size())};
        strings_.push_back(s);
        return {slot.index, true};
      }
      if (slot.data == s.data() && slot.size == s.size()) return {slot.index, false};
    }
  }
  // Forgets every string (a new binary frame starts a new table); keeps the storage.
  void Clear() {
    if (strings_.empty()) return;
    std::fill(slots_.begin(), slots_.end(), Slot{});
    strings_.clear();
  }
  const std::vector<std::string_view>& strings() const { return strings_; }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    const char* data = nullptr;
    size_t size = 0;
    uint32_t index = kEmpty;
  };
  static size_t Hash(std::string_view s) {
    const uint64_t h =
        (reinterpret_cast<uintptr_t>(s.data()) ^ (s.size() << 48)) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(1024, 2 * old.size()), Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.index == kEmpty) continue;
      size_t i = Hash({slot.data, slot.size}) & mask;
      while (slots_[i].index != kEmpty) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }

  std::vector<Slot> slots_;
  std::vector<std::string_view> strings_;
};

}  // namespace jitsym::proto

#endif  // JITSYM_PROTO_STRING_INTERNER_H_
