#include "client/gperftools_profile.h"

#include <algorithm>
#include <cstring>

#include "daemon/util/byte_reader.h"

namespace jitsym::client {
namespace {

constexpr uint64_t kMaxDepth = 1 << 16;

void AppendSlot(uint64_t v, int slot_bytes, bool big_endian, std::string* out) {
  char buf[8];
  for (int i = 0; i < slot_bytes; ++i) {
    const int shift = 8 * (big_endian ? slot_bytes - 1 - i : i);
    buf[i] = static_cast<char>((v >> shift) & 0xff);
  }
  out->append(buf, slot_bytes);
}

std::optional<uint64_t> Hex(std::string_view s) {
  if (s.empty() || s.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

const ProfileMapping* CpuProfile::FindMapping(uint64_t pc) const {
  for (const ProfileMapping& m : mappings) {
    if (pc >= m.start && pc < m.end) return &m;
  }
  return nullptr;
}

std::vector<ProfileMapping> ParseMapsText(std::string_view text) {
  std::vector<ProfileMapping> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    // START-END PERMS OFFSET DEV INODE [PATH]
    std::string_view f[5];
    size_t i = 0;
    bool ok = true;
    for (auto& field : f) {
      while (i < line.size() && line[i] == ' ') ++i;
      const size_t b = i;
      while (i < line.size() && line[i] != ' ') ++i;
      field = line.substr(b, i - b);
      if (field.empty()) ok = false;
    }
    if (!ok) continue;
    const size_t dash = f[0].find('-');
    if (dash == std::string_view::npos) continue;
    auto start = Hex(f[0].substr(0, dash)), end = Hex(f[0].substr(dash + 1)), off = Hex(f[2]);
    if (!start || !end || !off || *end <= *start) continue;
    while (i < line.size() && line[i] == ' ') ++i;
    ProfileMapping m;
    m.start = *start;
    m.end = *end;
    m.offset = *off;
    m.perms = f[1];
    m.path = line.substr(i);
    out.push_back(std::move(m));
  }
  return out;
}

Result<CpuProfile> ParseCpuProfile(std::string_view bytes, size_t max_pcs) {
  CpuProfile p;
  // Header slot 0 is 0 and slot 1 is 3: try 64-bit, then 32-bit, each in both byte orders.
  bool decided = false;
  for (int size : {8, 4}) {
    for (ByteOrder order : {ByteOrder::kLittle, ByteOrder::kBig}) {
      if (decided || bytes.size() < static_cast<size_t>(5 * size)) continue;
      ByteReader h(bytes, order);
      if (h.Word(size) == 0 && h.Word(size) == 3) {
        p.slot_bytes = size;
        p.big_endian = order == ByteOrder::kBig;
        decided = true;
      }
    }
  }
  if (!decided) {
    return MakeError(ErrorKind::kNotThisFormat, "not a gperftools CPU profile (no 0, 3 header)");
  }
  const size_t slot = static_cast<size_t>(p.slot_bytes);
  ByteReader r(bytes, p.big_endian ? ByteOrder::kBig : ByteOrder::kLittle);
  uint64_t h[5];
  for (auto& v : h) v = r.Word(slot);
  if (h[2] != 0) {
    return MakeError(ErrorKind::kUnsupported, "unsupported profile version " + std::to_string(h[2]),
                     2 * slot);
  }
  p.period_us = h[3];
  for (;;) {
    const size_t at = r.pos();
    const uint64_t count = r.Word(slot);
    const uint64_t depth = r.Word(slot);
    if (!r.ok()) {
      return MakeError(ErrorKind::kMalformed, "truncated: the profile ends before its trailer", at);
    }
    if (depth > kMaxDepth) {
      return MakeError(ErrorKind::kMalformed,
                       "record with " + std::to_string(depth) + " pcs (at most 65536)", at);
    }
    if (depth > r.remaining() / slot) {
      return MakeError(ErrorKind::kMalformed,
                       "truncated record: " + std::to_string(depth) + " pcs announced", at);
    }
    if (count == 0) {  // the trailer: 0, 1, 0
      if (depth != 1 || r.Word(slot) != 0 || !r.ok()) {
        return MakeError(ErrorKind::kMalformed,
                         "record with a zero count that is not the trailer (0, 1, 0)", at);
      }
      break;
    }
    if (p.pcs.size() + depth > max_pcs) {
      return MakeError(ErrorKind::kLimit, "more than " + std::to_string(max_pcs) + " pcs in all",
                       at);
    }
    CpuProfile::Sample s;
    s.count = count;
    s.first = static_cast<uint32_t>(p.pcs.size());
    s.depth = static_cast<uint32_t>(depth);
    for (uint64_t k = 0; k < depth; ++k) p.pcs.push_back(r.Word(slot));
    p.samples.push_back(s);
  }
  p.maps_text = bytes.substr(r.pos());
  p.mappings = ParseMapsText(p.maps_text);
  return p;
}

std::string WriteCpuProfileWithCallerPcsAdjusted(const CpuProfile& p) {
  std::string out;
  const int n = p.slot_bytes;
  const bool be = p.big_endian;
  for (uint64_t v : {uint64_t{0}, uint64_t{3}, uint64_t{0}, p.period_us, uint64_t{0}}) {
    AppendSlot(v, n, be, &out);
  }
  for (const CpuProfile::Sample& s : p.samples) {
    AppendSlot(s.count, n, be, &out);
    AppendSlot(s.depth, n, be, &out);
    const uint64_t* pcs = p.pcs_of(s);
    for (uint32_t k = 0; k < s.depth; ++k) {
      AppendSlot(k == 0 || pcs[k] == 0 ? pcs[k] : pcs[k] - 1, n, be, &out);
    }
  }
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{0}}) AppendSlot(v, n, be, &out);
  out.append(p.maps_text);
  return out;
}

std::string WriteSymbolizedProfile(const CpuProfile& p, std::string_view binary,
                                   const std::map<uint64_t, std::vector<std::string>>& names) {
  std::string out = "--- symbol\nbinary=";
  out.append(binary);
  out.push_back('\n');
  char buf[40];
  for (const auto& [pc, functions] : names) {
    if (functions.empty()) continue;
    std::snprintf(buf, sizeof(buf), "0x%0*llx ", p.slot_bytes * 2,
                  static_cast<unsigned long long>(pc));
    out.append(buf);
    for (size_t k = 0; k < functions.size(); ++k) {
      if (k > 0) out.append("--");
      // "--" separates inlined functions and a line ends the entry: neither inside a name.
      std::string clean = functions[k].empty() ? std::string("?") : functions[k];
      for (char& c : clean) {
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
      }
      for (size_t at; (at = clean.find("--")) != std::string::npos;) clean.replace(at, 2, "- ");
      if (clean.back() == '-') clean.back() = ' ';
      if (clean.front() == '-') clean.front() = ' ';
      out.append(clean);
    }
    out.push_back('\n');
  }
  out.append("---\n--- profile\n");
  out.append(WriteCpuProfileWithCallerPcsAdjusted(p));
  return out;
}

}  // namespace jitsym::client
