#include "client/gperftools_profile.h"

#include <algorithm>
#include <cstring>

namespace jitsym::client {
namespace {

constexpr uint64_t kMaxDepth = 1 << 16;

// Reads slots of one size and byte order, bounds-checked.
class SlotReader {
 public:
  SlotReader(std::string_view bytes, int slot_bytes, bool big_endian)
      : bytes_(bytes), slot_bytes_(slot_bytes), big_endian_(big_endian) {}

  bool Read(uint64_t* value) {
    if (bytes_.size() - pos_ < static_cast<size_t>(slot_bytes_)) return false;
    *value = Decode(bytes_.data() + pos_);
    pos_ += slot_bytes_;
    return true;
  }
  size_t pos() const { return pos_; }
  size_t left_slots() const { return (bytes_.size() - pos_) / slot_bytes_; }

  uint64_t Decode(const char* p) const {
    uint64_t v = 0;
    for (int i = 0; i < slot_bytes_; ++i) {
      const auto b = static_cast<uint8_t>(p[big_endian_ ? i : slot_bytes_ - 1 - i]);
      v = (v << 8) | b;
    }
    return v;
  }

 private:
  std::string_view bytes_;
  int slot_bytes_;
  bool big_endian_;
  size_t pos_ = 0;
};

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

std::optional<CpuProfile> ParseCpuProfile(std::string_view bytes, CpuProfileError* error,
                                          size_t max_pcs) {
  CpuProfile p;
  // Header slot 0 is 0 and slot 1 is 3: try 64-bit, then 32-bit, each in both byte orders.
  bool decided = false;
  for (int size : {8, 4}) {
    for (bool be : {false, true}) {
      if (decided || bytes.size() < static_cast<size_t>(5 * size)) continue;
      SlotReader r(bytes, size, be);
      if (r.Decode(bytes.data()) == 0 && r.Decode(bytes.data() + size) == 3) {
        p.slot_bytes = size;
        p.big_endian = be;
        decided = true;
      }
    }
  }
  if (!decided) {
    *error = {true, 0, "not a gperftools CPU profile (no 0, 3 header)"};
    return std::nullopt;
  }
  SlotReader r(bytes, p.slot_bytes, p.big_endian);
  uint64_t h[5];
  for (auto& v : h) r.Read(&v);
  if (h[2] != 0) {
    *error = {false, static_cast<size_t>(2 * p.slot_bytes),
              "unsupported profile version " + std::to_string(h[2])};
    return std::nullopt;
  }
  p.period_us = h[3];
  for (;;) {
    const size_t at = r.pos();
    uint64_t count, depth;
    if (!r.Read(&count) || !r.Read(&depth)) {
      *error = {false, at, "truncated: the profile ends before its trailer"};
      return std::nullopt;
    }
    if (depth > kMaxDepth) {
      *error = {false, at, "record with " + std::to_string(depth) + " pcs (at most 65536)"};
      return std::nullopt;
    }
    if (depth > r.left_slots()) {
      *error = {false, at, "truncated record: " + std::to_string(depth) + " pcs announced"};
      return std::nullopt;
    }
    if (count == 0) {  // the trailer: 0, 1, 0
      uint64_t pc = 1;
      if (depth != 1 || !r.Read(&pc) || pc != 0) {
        *error = {false, at, "record with a zero count that is not the trailer (0, 1, 0)"};
        return std::nullopt;
      }
      break;
    }
    if (p.pcs.size() + depth > max_pcs) {
      *error = {false, at, "more than " + std::to_string(max_pcs) + " pcs in all"};
      return std::nullopt;
    }
    CpuProfile::Sample s;
    s.count = count;
    s.first = static_cast<uint32_t>(p.pcs.size());
    s.depth = static_cast<uint32_t>(depth);
    for (uint64_t k = 0; k < depth; ++k) {
      uint64_t pc = 0;
      r.Read(&pc);
      p.pcs.push_back(pc);
    }
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
