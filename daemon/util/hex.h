// One parser for hex numbers as addresses are written in text (requests, the client's input,
// perfinfo maps): with or without "0x", any number of leading zeros, at most 64 bits. Header-only
// and standard library only, so every layer of the daemon and the client may use it.
#ifndef JITSYM_DAEMON_UTIL_HEX_H_
#define JITSYM_DAEMON_UTIL_HEX_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace jitsym {

namespace hex_internal {
// Hex digit values; -1 for everything else. A table: this runs once per address per request.
inline constexpr std::array<int8_t, 256> kHexValue = [] {
  std::array<int8_t, 256> table{};
  table.fill(-1);
  for (int c = '0'; c <= '9'; ++c) table[c] = static_cast<int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) table[c] = static_cast<int8_t>(c - 'a' + 10);
  for (int c = 'A'; c <= 'F'; ++c) table[c] = static_cast<int8_t>(c - 'A' + 10);
  return table;
}();
}  // namespace hex_internal

// nullopt for an empty text, a non-hex character, or a value wider than 64 bits.
inline std::optional<uint64_t> ParseHex64(std::string_view text) {
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  // Skip leading zeros, then at most 16 digits fit.
  size_t i = 0;
  while (i + 1 < text.size() && text[i] == '0') ++i;
  if (text.size() - i > 16) return std::nullopt;
  uint64_t value = 0;
  for (; i < text.size(); ++i) {
    const int digit = hex_internal::kHexValue[static_cast<unsigned char>(text[i])];
    if (digit < 0) return std::nullopt;
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  return value;
}

}  // namespace jitsym

#endif  // JITSYM_DAEMON_UTIL_HEX_H_
