// Reading an abbreviation table (abbrev.h).
#include "daemon/dwarf/abbrev.h"

#include <algorithm>
#include <string>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/errors.h"

namespace jitsym::dwarf {

Result<AbbrevTable> AbbrevTable::Read(std::string_view section, uint64_t offset,
                                      const FormParams& p, ByteOrder order,
                                      std::optional<uint64_t> until_code) {
  constexpr std::string_view kSection = "abbrev";
  if (offset >= section.size()) return Malformed(kSection, offset, "table past the section's end");
  ByteReader r(section.substr(offset), order);
  AbbrevTable t;
  for (;;) {
    const uint64_t at = offset + r.pos();
    const uint64_t code = r.Uleb();
    if (!r.ok()) return Malformed(kSection, at, "table without its end (code 0)");
    if (code == 0) {
      t.end_ = offset + r.pos();
      break;
    }
    Abbrev a;
    a.code = code;
    const uint64_t tag = r.Uleb();
    const uint8_t children = r.U8();
    if (!r.ok())
      return Malformed(kSection, at, "abbreviation " + std::to_string(code) + " cut short");
    if (tag == 0 || tag > 0xffff)
      return Malformed(kSection, at, "tag " + Hex(tag) + " out of range");
    a.tag = static_cast<uint16_t>(tag);
    a.has_children = children != 0;
    a.first_spec = static_cast<uint32_t>(t.specs_.size());
    int64_t fixed = 0;
    for (;;) {
      const uint64_t name = r.Uleb();
      const uint64_t form = r.Uleb();
      if (!r.ok()) {
        return Malformed(kSection, at, "abbreviation " + std::to_string(code) + " cut short");
      }
      if (name == 0 && form == 0) break;
      if (name == 0 || name > 0xffff) {
        return Malformed(kSection, at, "attribute " + Hex(name) + " out of range");
      }
      AttrSpec s;
      s.name = static_cast<uint16_t>(name);
      s.form = form > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(form);
      if (form == DW_FORM_implicit_const) {
        s.implicit_const = r.Sleb();
        if (!r.ok()) return Malformed(kSection, at, "implicit constant cut short");
      }
      a.has_sibling |= s.name == DW_AT_sibling;
      const std::optional<uint8_t> size = FixedFormSize(s.form, p);
      fixed = size && fixed >= 0 ? fixed + *size : -1;
      if (size && s.form != DW_FORM_data16 && s.form != DW_FORM_flag_present &&
          s.form != DW_FORM_implicit_const) {
        s.word = *size;
      }

      t.specs_.push_back(s);
    }
    a.spec_count = static_cast<uint32_t>(t.specs_.size() - a.first_spec);
    // Bounded by the section: every spec took two bytes of it.
    a.fixed_size = fixed >= 0 && fixed < (int64_t{1} << 30) ? static_cast<int32_t>(fixed) : -1;
    if (t.abbrevs_.empty()) t.first_code_ = code;
    if (code != t.first_code_ + t.abbrevs_.size()) t.consecutive_ = false;
    t.abbrevs_.push_back(a);
    if (until_code && code == *until_code) {
      t.end_ = offset + r.pos();
      break;
    }
  }
  if (!t.consecutive_) {
    std::stable_sort(t.abbrevs_.begin(), t.abbrevs_.end(),
                     [](const Abbrev& x, const Abbrev& y) { return x.code < y.code; });
    for (size_t i = 1; i < t.abbrevs_.size(); ++i) {
      if (t.abbrevs_[i].code == t.abbrevs_[i - 1].code) {
        return Malformed(kSection, offset,
                         "abbreviation code " + std::to_string(t.abbrevs_[i].code) + " twice");
      }
    }
  }
  return t;
}

const Abbrev* AbbrevTable::FindSlow(uint64_t code) const {
  auto it = std::lower_bound(abbrevs_.begin(), abbrevs_.end(), code,
                             [](const Abbrev& a, uint64_t c) { return a.code < c; });
  return it != abbrevs_.end() && it->code == code ? &*it : nullptr;
}

}  // namespace jitsym::dwarf
