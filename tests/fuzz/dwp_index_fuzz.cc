// The pure parts of reading a .dwp package (daemon/native/dwp_package.h): its unit index
// (.debug_cu_index) and a unit's string offsets rewritten against the package's strings. The
// first byte picks the byte order and where the input splits into offsets and strings.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/native/dwp_package.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool big = (data[0] & 1) != 0;
  const bool header = (data[0] & 2) != 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string error;
  if (auto index = jitsym::native::ParseDwpIndex(in, big, &error)) {
    // Every unit's parts are within what the index said; names of their sections are total.
    for (const auto& unit : index->units) {
      for (const auto& part : unit.parts) {
        (void)jitsym::native::DwpSectionName(index->version, part.section);
      }
    }
  }
  const size_t cut = in.size() * (data[0] >> 2) / 64;
  std::string offsets, strings;
  if (jitsym::native::CompactStrings(in.substr(0, cut), in.substr(cut), big, header, &offsets,
                                     &strings)) {
    if (offsets.size() != cut) __builtin_trap();  // the same table, renumbered
  }
  (void)jitsym::native::SafeRelativeName(in.substr(0, cut));
  return 0;
}
