// Parses perfinfo maps (see perfinfo_parser.h).
#include "daemon/formats/perfinfo/perfinfo_parser.h"

#include <cstring>
#include <optional>

#include "daemon/util/hex.h"

namespace jitsym::perfinfo {

void PerfInfoParser::Line(std::string_view line, std::vector<PerfInfoImage>* out) {
  ++lines_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // ImageLoad;PATH;MVID;BASE;...: only the first four fields matter.
  std::string_view f[4];
  size_t n = 0;
  while (n < 4 && !line.empty()) {
    const size_t semi = line.find(';');
    f[n++] = line.substr(0, semi);
    line.remove_prefix(semi == std::string_view::npos ? line.size() : semi + 1);
  }
  if (n < 4 || f[0] != "ImageLoad") return;
  const std::optional<uint64_t> base = ParseHex64(f[3]);
  if (!base || *base == 0) return;  // not ReadyToRun: the runtime logs base 0
  out->push_back({std::string(f[1]), std::string(f[2]), *base});
}

void PerfInfoParser::Feed(std::string_view bytes, std::vector<PerfInfoImage>* out) {
  const char* const begin = bytes.data();
  const uint64_t begin_offset = fed_;
  fed_ += bytes.size();
  while (!bytes.empty()) {
    const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
    const size_t len =
        nl ? static_cast<size_t>(static_cast<const char*>(nl) - bytes.data()) : bytes.size();
    const std::string_view piece = bytes.substr(0, len);
    if (!skipping_ && partial_.size() + piece.size() > kMaxLineBytes) {
      if (long_lines_++ == 0) first_long_line_ = consumed_;
      skipping_ = true;
      std::string().swap(partial_);
    }
    if (nl == nullptr) {
      if (!skipping_) partial_.append(piece);
      return;
    }
    if (skipping_) {
      skipping_ = false;
    } else if (partial_.empty()) {
      Line(piece, out);
    } else {
      partial_.append(piece);
      Line(partial_, out);
      partial_.clear();
    }
    bytes.remove_prefix(len + 1);
    consumed_ = begin_offset + static_cast<uint64_t>(bytes.data() - begin);
  }
}

std::vector<PerfInfoImage> ParsePerfInfo(std::string_view text) {
  std::vector<PerfInfoImage> out;
  PerfInfoParser parser;
  parser.Feed(text, &out);
  if (!text.empty() && text.back() != '\n') parser.Feed("\n", &out);
  return out;
}

}  // namespace jitsym::perfinfo
