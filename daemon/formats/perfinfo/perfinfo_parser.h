// Parser for the perfinfo maps .NET 8 and older write beside their perf maps
// (`/tmp/perfinfo-<pid>.map`, DOTNET_PerfMapEnabled): where the runtime loaded each image.
//
//   file  := line*
//   line  := field (";" field)* ["\r"] "\n"
//   image := "ImageLoad" ";" PATH ";" MVID ";" BASE ";"
//   BASE  := ["0x" | "0X"] hexdigit+   (at most 64 bits of value)
//
// Only ImageLoad lines with a non-zero base (a ReadyToRun image the loader placed) are returned;
// every other line (RuntimeVersion, JIT-only images with base "(nil)" or 0, short lines) is
// skipped. Pure: text in, images out; the query layer reads the file.
#ifndef JITSYM_DAEMON_FORMATS_PERFINFO_PERFINFO_PARSER_H_
#define JITSYM_DAEMON_FORMATS_PERFINFO_PERFINFO_PARSER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::perfinfo {

struct PerfInfoImage {
  std::string path;
  std::string mvid;
  uint64_t base = 0;
};

std::vector<PerfInfoImage> ParsePerfInfo(std::string_view text);

}  // namespace jitsym::perfinfo

#endif  // JITSYM_DAEMON_FORMATS_PERFINFO_PERFINFO_PARSER_H_
