// The reader's error messages, one shape for all: "debug_<section> offset 0x<hex>: <what>", the
// offset also in Error::offset (from the section's start).
#ifndef JITSYM_DAEMON_DWARF_ERRORS_H_
#define JITSYM_DAEMON_DWARF_ERRORS_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "daemon/util/result.h"

namespace jitsym::dwarf {

inline std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

inline Error DwarfError(ErrorKind kind, std::string_view section, uint64_t offset,
                        std::string_view what) {
  std::string m = "debug_";
  m.append(section);
  m += " offset ";
  m += Hex(offset);
  m += ": ";
  m.append(what);
  return MakeError(kind, std::move(m), offset);
}

inline Error Malformed(std::string_view section, uint64_t offset, std::string_view what) {
  return DwarfError(ErrorKind::kMalformed, section, offset, what);
}

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_ERRORS_H_
