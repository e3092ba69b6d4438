// perfinfo-<pid>.map files as the query side follows them: fed in the chunks the first byte
// seeds, the parser must give exactly the images of the whole text up to the last complete
// line, however the bytes were cut.
#include <cstdlib>
#include <string_view>
#include <vector>

#include "daemon/formats/perfinfo/perfinfo_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const unsigned seed = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  jitsym::perfinfo::PerfInfoParser parser;
  std::vector<jitsym::perfinfo::PerfInfoImage> chunked;
  size_t at = 0;
  for (unsigned k = seed; at < text.size(); k = k * 1103515245u + 12345u) {
    const size_t n = 1 + (k >> 16) % (seed % 4 == 0 ? 17 : 70000);
    parser.Feed(text.substr(at, n), &chunked);
    at += n;
  }
  const size_t consumed = parser.consumed();
  if (consumed > text.size() || (consumed > 0 && text[consumed - 1] != '\n')) std::abort();
  if (text.substr(consumed).find('\n') != std::string_view::npos) std::abort();
  // Lines over the bound are skipped by both, so the whole parse of the same bytes agrees.
  const auto whole = jitsym::perfinfo::ParsePerfInfo(text.substr(0, consumed));
  if (whole.size() != chunked.size()) std::abort();
  for (size_t i = 0; i < whole.size(); ++i) {
    if (whole[i].base != chunked[i].base || whole[i].path != chunked[i].path ||
        whole[i].mvid != chunked[i].mvid || whole[i].base == 0) {
      std::abort();
    }
  }
  return 0;
}
