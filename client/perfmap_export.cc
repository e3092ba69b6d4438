#include "client/perfmap_export.h"

namespace jitsym::client {
namespace {

void AppendHex(uint64_t value, std::string* out) {
  char buf[16];
  char* p = buf + sizeof(buf);
  do {
    *--p = "0123456789abcdef"[value & 0xF];
    value >>= 4;
  } while (value != 0);
  out->append(p, buf + sizeof(buf) - p);
}

}  // namespace

void AppendPerfMapLine(const proto::SymbolEntry& s, std::string* out) {
  if (s.size == 0) return;
  AppendHex(s.start, out);
  out->push_back(' ');
  AppendHex(s.size, out);
  out->push_back(' ');
  const size_t name_at = out->size();
  out->append(s.name.empty() ? std::string_view("[unnamed]") : std::string_view(s.name));
  for (size_t i = name_at; i < out->size(); ++i) {
    if (static_cast<unsigned char>((*out)[i]) < 0x20) (*out)[i] = ' ';
  }
  out->push_back('\n');
}

void FormatPerfMap(const std::vector<proto::SymbolEntry>& symbols, std::string* out) {
  for (const proto::SymbolEntry& s : symbols) AppendPerfMapLine(s, out);
}

}  // namespace jitsym::client
