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
// skipped, and so is a line longer than kMaxLineBytes (no path is that long). Pure: bytes in,
// images out; the query layer reads the file, as it grows.
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

// Incremental: the file's bytes in any pieces; a line is parsed once its newline has come, so
// a line being written is never taken in part. Memory: the images returned, and one partial
// line of at most kMaxLineBytes.
class PerfInfoParser {
 public:
  // PATH_MAX is 4096 and an MVID 38 bytes: a longer line is no image's.
  static constexpr size_t kMaxLineBytes = 8192;

  // Parses the complete lines of what came so far; appends their images to *out.
  void Feed(std::string_view bytes, std::vector<PerfInfoImage>* out);

  uint64_t consumed() const { return consumed_; }  // bytes of complete lines
  uint64_t lines() const { return lines_; }
  uint64_t long_lines() const { return long_lines_; }  // skipped for their length
  // Offset of the first line skipped for its length (valid when long_lines() > 0).
  uint64_t first_long_line() const { return first_long_line_; }

 private:
  void Line(std::string_view line, std::vector<PerfInfoImage>* out);

  std::string partial_;    // the start of a line whose newline has not come
  bool skipping_ = false;  // the current line is too long: dropped up to its newline
  uint64_t fed_ = 0;
  uint64_t consumed_ = 0;
  uint64_t lines_ = 0;
  uint64_t long_lines_ = 0;
  uint64_t first_long_line_ = 0;
};

// The images of a whole text (a last line without its newline counts too).
std::vector<PerfInfoImage> ParsePerfInfo(std::string_view text);

}  // namespace jitsym::perfinfo

#endif  // JITSYM_DAEMON_FORMATS_PERFINFO_PERFINFO_PARSER_H_
