// Formatting a perf map (tools/perf/Documentation/jit-interface.txt) from a symbols answer:
//
//   line := START_HEX " " SIZE_HEX " " NAME "\n"      (hex without 0x, as V8 and .NET write)
//
// Pure: entries in, text out. Names lose control characters (a newline would split the line).
#ifndef JITSYM_CLIENT_PERFMAP_EXPORT_H_
#define JITSYM_CLIENT_PERFMAP_EXPORT_H_

#include <string>
#include <vector>

#include "proto/protocol.h"

namespace jitsym::client {

// Appends the entry's line, if its size is not zero.
void AppendPerfMapLine(const proto::SymbolEntry& entry, std::string* out);
// Appends one line per entry with a non-zero size, in the order given.
void FormatPerfMap(const std::vector<proto::SymbolEntry>& symbols, std::string* out);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_PERFMAP_EXPORT_H_
