// A unit's abbreviation table (.debug_abbrev; DWARF 5 section 7.5.3), read once per unit:
//
//   entry    code (ULEB128, 0 ends the table), tag (ULEB128), children (1 byte),
//            then (attribute name, form) ULEB128 pairs, with an SLEB128 value after
//            DW_FORM_implicit_const, ended by (0, 0)
//
// For each abbreviation the reader works out once what the DIE walk needs every time: the size
// of all its attribute values when the unit header alone decides it (then skipping a DIE is one
// addition), and whether it has DW_AT_sibling. Codes are looked up by index when they are
// consecutive (GCC and clang number them 1, 2, 3...), else by binary search.
#ifndef JITSYM_DAEMON_DWARF_ABBREV_H_
#define JITSYM_DAEMON_DWARF_ABBREV_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/dwarf/form.h"
#include "daemon/util/byte_reader.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

struct AttrSpec {
  static constexpr uint8_t kNotAWord = 0xff;
  uint16_t name = 0;
  uint8_t word = kNotAWord;  // the value is an unsigned word of this many bytes (the DIE
                             // cursor reads it in line), for the forms whose value is one
  uint32_t form = 0;         // as written: an unknown form fails only the DIEs that use it
  int64_t implicit_const = 0;
};

struct Abbrev {
  uint64_t code = 0;
  uint16_t tag = 0;
  bool has_children = false;
  bool has_sibling = false;  // a DW_AT_sibling attribute
  int32_t fixed_size = -1;   // bytes of all values when FixedFormSize decides each, else -1
  uint32_t first_spec = 0;   // into AbbrevTable::specs()
  uint32_t spec_count = 0;
};

class AbbrevTable {
 public:
  // The table at `offset` of `section` (.debug_abbrev, or the unit's contribution to it), for a
  // unit of these form parameters. kMalformed with the offset when an entry is cut short, a
  // code appears twice or a name or tag does not fit 16 bits. With `until_code`, reading stops
  // after that code's entry (what a unit DIE alone needs: compilers give it the first code);
  // end_offset() is then where it stopped.
  static Result<AbbrevTable> Read(std::string_view section, uint64_t offset, const FormParams& p,
                                  ByteOrder order, std::optional<uint64_t> until_code = {});

  // The abbreviation of `code`, or null.
  const Abbrev* Find(uint64_t code) const {
    if (consecutive_) {
      const uint64_t i = code - first_code_;
      return code >= first_code_ && i < abbrevs_.size() ? &abbrevs_[i] : nullptr;
    }
    return FindSlow(code);
  }
  std::span<const AttrSpec> Specs(const Abbrev& a) const {
    return std::span<const AttrSpec>(specs_).subspan(a.first_spec, a.spec_count);
  }
  size_t size() const { return abbrevs_.size(); }
  // Just past the table's end (code 0) in its section.
  uint64_t end_offset() const { return end_; }

 private:
  const Abbrev* FindSlow(uint64_t code) const;

  std::vector<Abbrev> abbrevs_;  // in code order when consecutive_, else sorted by code
  std::vector<AttrSpec> specs_;
  uint64_t first_code_ = 0;
  uint64_t end_ = 0;
  bool consecutive_ = true;
};

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_ABBREV_H_
