// Listing a file's units, its package index, shared abbreviation tables, strings (context.h).
#include "daemon/dwarf/context.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/errors.h"

namespace jitsym::dwarf {
namespace {

// Strings shorter than this are found by a plain scan; longer ones through the run cache.
constexpr size_t kShortString = 256;

uint32_t ParamsKey(const FormParams& p) {
  return (uint32_t{p.version} << 16) | (uint32_t{p.address_size} << 8) | p.offset_size;
}

}  // namespace

Result<std::optional<SupplementaryLink>> ReadSupplementaryLink(const Sections& s) {
  if (std::string_view sup = s[SectionId::kSup]; !sup.empty()) {
    ByteReader r(sup, s.order);
    SupplementaryLink link;
    link.dwarf5 = true;
    const uint16_t version = r.U16();
    const uint8_t is_supplementary = r.U8();
    link.name = r.CString();
    const uint64_t checksum = r.Uleb();
    if (!r.ok() || checksum > r.remaining()) return Malformed("sup", 0, "section cut short");
    if (version != 5) return DwarfError(ErrorKind::kUnsupported, "sup", 0, "version not 5");
    if (is_supplementary != 0) return std::optional<SupplementaryLink>();  // it is one itself
    const std::span<const uint8_t> id = r.Bytes(checksum);
    link.id = {reinterpret_cast<const char*>(id.data()), id.size()};
    if (link.name.empty()) return Malformed("sup", 3, "no file name");
    return std::optional<SupplementaryLink>(link);
  }
  std::string_view alt = s[SectionId::kGnuAltLink];
  if (alt.empty()) return std::optional<SupplementaryLink>();
  const size_t nul = alt.find('\0');
  if (nul == std::string_view::npos || nul == 0 || nul + 1 >= alt.size()) {
    return MakeError(ErrorKind::kMalformed, ".gnu_debugaltlink: no name, or no build id after it");
  }
  SupplementaryLink link;
  link.name = alt.substr(0, nul);
  link.id = alt.substr(nul + 1);
  return std::optional<SupplementaryLink>(link);
}

Context::Context(const Sections& sections) : s_(sections) {
  ListUnits(SectionId::kInfo);
  types_begin_ = units_.size();
  ListUnits(SectionId::kTypes);
  for (uint32_t i = 0; i < units_.size(); ++i) {
    const UnitHeader& h = units_[i];
    if (h.unit_type == DW_UT_type || h.unit_type == DW_UT_split_type) {
      type_units_.try_emplace(h.type_signature, i);
    } else if (h.has_dwo_id && h.unit_type == DW_UT_split_compile) {
      split_units_.try_emplace(h.dwo_id, i);
    }
  }
  if (!s_[SectionId::kCuIndex].empty() || !s_[SectionId::kTuIndex].empty()) {
    package_ = true;
    ApplyIndex(SectionId::kCuIndex);
    ApplyIndex(SectionId::kTuIndex);
    if (index_error_) {
      // A package's units are read through its index only: without it, none is.
      type_units_.clear();
      split_units_.clear();
    }
  }
}

void Context::ListUnits(SectionId id) {
  const std::string_view section = s_[id];
  const bool types = id == SectionId::kTypes;
  // Each unit takes at least 11 bytes: the loop is bounded by the section's size.
  for (uint64_t offset = 0; offset < section.size();) {
    Result<UnitHeader> h = ReadUnitHeader(section, offset, s_.order, types, s_.dwo);
    if (!h) {
      list_errors_.push_back(std::move(h).error());
      return;
    }
    offset = h->end;
    units_.push_back(*h);
  }
}

void Context::ApplyIndex(SectionId index_id) {
  const std::string_view bytes = s_[index_id];
  if (bytes.empty()) return;
  const bool tu = index_id == SectionId::kTuIndex;
  Result<DwpIndex> index = ReadDwpIndex(bytes, s_.order, tu ? "tu_index" : "cu_index");
  if (!index) {
    index_error_ = std::move(index).error();
    return;
  }
  // Every contribution of every row inside its section, or the index is not used at all: a row
  // that lies about one would otherwise read its unit with pieces missing, and say nothing.
  const bool in_types = tu && index->version == 2;
  for (const DwpRow& row : index->rows) {
    const PackageShare share = index->Share(row);
    const std::pair<const Contribution*, SectionId> parts[] = {
        {&index->UnitPart(row, in_types), in_types ? SectionId::kTypes : SectionId::kInfo},
        {&share.abbrev, SectionId::kAbbrev},
        {&share.line, SectionId::kLine},
        {&share.str_offsets, SectionId::kStrOffsets},
        {&share.rnglists, SectionId::kRngLists}};
    for (const auto& [part, id] : parts) {
      const uint64_t size = s_[id].size();
      if (part->present && (part->offset > size || part->size > size - part->offset)) {
        index_error_ = DwarfError(ErrorKind::kMalformed, tu ? "tu_index" : "cu_index", 0,
                                  "the row of " + Hex(row.signature) + " puts its " +
                                      std::string(SectionName(id)) + " contribution at [" +
                                      Hex(part->offset) + ", +" + Hex(part->size) +
                                      "), past the section's " + std::to_string(size) + " bytes");
        return;
      }
    }
  }
  for (const DwpRow& row : index->rows) {
    // Version 2 keeps type units in .debug_types.dwo; version 5 all units in .debug_info.dwo.
    const Contribution& part = index->UnitPart(row, in_types);
    if (!part.present) continue;
    const UnitHeader* h = UnitContaining(part.offset, in_types);
    if (h == nullptr || h->offset != part.offset) continue;
    UnitHeader& unit = units_[static_cast<size_t>(h - units_.data())];
    unit.share = index->Share(row);
    const uint32_t i = static_cast<uint32_t>(h - units_.data());
    if (tu) {
      type_units_.insert_or_assign(row.signature, i);
    } else {
      split_units_.insert_or_assign(row.signature, i);
    }
  }
}

const UnitHeader* Context::UnitContaining(uint64_t offset, bool types) const {
  const UnitHeader* begin = units_.data() + (types ? types_begin_ : 0);
  const UnitHeader* end = units_.data() + (types ? units_.size() : types_begin_);
  const UnitHeader* it = std::upper_bound(
      begin, end, offset, [](uint64_t o, const UnitHeader& h) { return o < h.offset; });
  if (it == begin) return nullptr;
  --it;
  return offset < it->end ? it : nullptr;
}

const UnitHeader* Context::TypeUnit(uint64_t signature) const {
  auto it = type_units_.find(signature);
  return it == type_units_.end() ? nullptr : &units_[it->second];
}

const UnitHeader* Context::SplitUnitById(uint64_t dwo_id) const {
  auto it = split_units_.find(dwo_id);
  return it == split_units_.end() ? nullptr : &units_[it->second];
}

Result<std::shared_ptr<const AbbrevTable>> Context::Abbrevs(uint64_t offset,
                                                            const FormParams& p) const {
  constexpr std::string_view kSection = "abbrev";
  const std::string_view section = s_[SectionId::kAbbrev];
  std::lock_guard lock(abbrev_mu_);
  if (auto it = abbrevs_.find({offset, ParamsKey(p)}); it != abbrevs_.end()) return it->second;
  uint64_t limit = section.size();
  if (auto next = abbrev_spans_.upper_bound(offset); next != abbrev_spans_.end()) {
    limit = next->first;
  }
  if (auto at = abbrev_spans_.upper_bound(offset); at != abbrev_spans_.begin()) {
    --at;
    const bool same = at->first == offset && at->second.table;
    if (offset < at->second.end && !same) {
      return Malformed(
          kSection, offset,
          "abbreviation table inside the bytes of another (at " + Hex(at->first) + ")");
    }
    if (same) limit = section.size();  // the same table, read for other form parameters
  }
  // Read only up to the next table known: every byte is read once however units point.
  Result<AbbrevTable> t = AbbrevTable::Read(section.substr(0, limit), offset, p, s_.order);
  if (!t) {
    if (offset < limit) abbrev_spans_.try_emplace(offset, Span{limit, false});
    return std::move(t).error();
  }
  abbrev_spans_.try_emplace(offset, Span{t->end_offset(), true});
  auto table = std::make_shared<const AbbrevTable>(std::move(*t));
  abbrevs_.emplace(AbbrevKey{offset, ParamsKey(p)}, table);
  return table;
}

Result<std::string_view> Context::StringAt(SectionId id, uint64_t offset) const {
  const std::string_view section = s_[id];
  const std::string_view name = SectionName(id);
  if (offset >= section.size()) {
    return Malformed(name, offset,
                     "string offset past the section's end (" + Hex(section.size()) + ")");
  }
  const char* start = section.data() + offset;
  const size_t left = section.size() - offset;
  if (const void* nul = std::memchr(start, 0, std::min(left, kShortString))) {
    return std::string_view(start, static_cast<const char*>(nul) - start);
  }
  if (id != SectionId::kStr && id != SectionId::kLineStr) {
    return Malformed(name, offset, "string runs past its section's end");
  }
  std::lock_guard lock(string_mu_);
  std::map<uint64_t, uint64_t>& runs = string_runs_[id == SectionId::kStr ? 0 : 1];
  uint64_t nul_at = section.size();
  auto next = runs.upper_bound(offset);
  if (next != runs.begin() && std::prev(next)->second >= offset) {
    nul_at = std::prev(next)->second;  // inside a run scanned before
  } else {
    // Scan up to the next run known, whose end is then this one's.
    const uint64_t limit = next == runs.end() ? section.size() : next->first;
    const void* nul = std::memchr(start, 0, limit - offset);
    long_scanned_ += nul != nullptr ? static_cast<const char*>(nul) - start : limit - offset;
    if (nul != nullptr) {
      nul_at = static_cast<uint64_t>(static_cast<const char*>(nul) - section.data());
    } else if (next != runs.end()) {
      nul_at = next->second;
      runs.erase(next);
    }
    runs.emplace(offset, nul_at);
  }
  if (nul_at >= section.size()) {
    return Malformed(name, offset, "string runs past its section's end");
  }
  return std::string_view(start, nul_at - offset);
}

uint64_t Context::long_string_bytes_scanned_for_testing() const {
  std::lock_guard lock(string_mu_);
  return long_scanned_;
}

}  // namespace jitsym::dwarf
