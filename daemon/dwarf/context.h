// The DWARF of one file, over its sections (sections.h): the unit headers of .debug_info and
// .debug_types listed once, type units by signature, a package's index applied to its units,
// abbreviation tables shared by the units that name the same one, and the file's links to
// others (a dwz or DWARF 5 supplementary file). Shaped like LLVM's DWARFContext; units are read
// through unit.h.
//
// Pure over the byte spans it is given: no file I/O, no globals. A caller that has the other
// files' bytes (a supplementary file, .dwo files, a .dwp package) makes a Context of each and
// links them: set_supplementary() here, a skeleton's split unit through split_unit.h.
//
// Thread safety: const members are safe from several threads once the links are set (the
// abbreviation cache has its own lock).
#ifndef JITSYM_DAEMON_DWARF_CONTEXT_H_
#define JITSYM_DAEMON_DWARF_CONTEXT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/dwarf/abbrev.h"
#include "daemon/dwarf/dwp_index.h"
#include "daemon/dwarf/sections.h"
#include "daemon/dwarf/unit_header.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

// The file a dwz'd file (.gnu_debugaltlink: a name, NUL, a build id) or a DWARF 5 file
// (.debug_sup: version 5, is_supplementary 0, a name, NUL, checksum length, checksum) shares
// DIEs and strings with. nullopt when the file names none; kMalformed when the section is
// broken (no NUL, a checksum past its end, a version not 5).
struct SupplementaryLink {
  std::string_view name;
  std::string_view id;  // the build id or checksum, raw bytes
  bool dwarf5 = false;  // from .debug_sup
};
Result<std::optional<SupplementaryLink>> ReadSupplementaryLink(const Sections& s);

class Context {
 public:
  explicit Context(const Sections& sections);
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Sections& sections() const { return s_; }
  std::string_view section(SectionId id) const { return s_[id]; }
  ByteOrder order() const { return s_.order; }
  bool split() const { return s_.dwo; }

  // The units of .debug_info, then of .debug_types, in section order.
  const std::vector<UnitHeader>& units() const { return units_; }
  // Why listing stopped early (a header that cannot be read: the units before it are listed),
  // or null. One per section at most.
  const std::vector<Error>& list_errors() const { return list_errors_; }
  // A package index that cannot be read (the package's units are then not read), or null.
  const Error* index_error() const { return index_error_ ? &*index_error_ : nullptr; }
  bool package() const { return package_; }

  // The unit whose DIEs hold `offset` of .debug_info (.debug_types when `types`), or null.
  const UnitHeader* UnitContaining(uint64_t offset, bool types) const;
  // The type unit of `signature`, or null.
  const UnitHeader* TypeUnit(uint64_t signature) const;
  // The split compile unit whose header (DWARF 5) or package index row has `dwo_id`, or null.
  // A DWARF 4 .dwo names its id in its unit DIE only: split_unit.h looks there.
  const UnitHeader* SplitUnitById(uint64_t dwo_id) const;

  // The file DW_FORM_GNU_ref_alt, GNU_strp_alt, ref_sup* and strp_sup read from; set before
  // any unit is read, it must outlive this context.
  void set_supplementary(const Context* sup) { sup_ = sup; }
  const Context* supplementary() const { return sup_; }

  // The abbreviation table at `offset` of .debug_abbrev for units of parameters `p`, read on
  // first use and shared. A table that starts inside another one read before is refused
  // (kMalformed): so the tables read cost at most the section's size, however many units name
  // them.
  Result<std::shared_ptr<const AbbrevTable>> Abbrevs(uint64_t offset, const FormParams& p) const;

  // The NUL-terminated string at `offset` of a string section (str, line_str); kMalformed when
  // the offset is outside it or the string does not end inside it.
  Result<std::string_view> StringAt(SectionId id, uint64_t offset) const;
  // Bytes scanned for the NULs of strings longer than the short scan, all sections together.
  uint64_t long_string_bytes_scanned_for_testing() const;

 private:
  void ListUnits(SectionId id);
  void ApplyIndex(SectionId index_id);

  Sections s_;
  std::vector<UnitHeader> units_;
  size_t types_begin_ = 0;  // units_[types_begin_..] are .debug_types'
  std::vector<Error> list_errors_;
  std::optional<Error> index_error_;
  bool package_ = false;
  std::unordered_map<uint64_t, uint32_t> type_units_;   // signature -> units_ index
  std::unordered_map<uint64_t, uint32_t> split_units_;  // dwo id -> units_ index
  const Context* sup_ = nullptr;

  struct AbbrevKey {
    uint64_t offset;
    uint32_t params;
    bool operator<(const AbbrevKey& o) const {
      return offset != o.offset ? offset < o.offset : params < o.params;
    }
  };
  mutable std::mutex abbrev_mu_;
  mutable std::map<AbbrevKey, std::shared_ptr<const AbbrevTable>> abbrevs_;
  // Start -> end of the bytes each table read covered, and whether it was a table.
  struct Span {
    uint64_t end;
    bool table;
  };
  mutable std::map<uint64_t, Span> abbrev_spans_;
  // Where the strings of long runs end, so that no byte of a string section is scanned twice
  // for its NUL however many references point into one long string: start -> the NUL's
  // offset (the section's size when there is none), every byte between them not NUL.
  mutable std::mutex string_mu_;
  mutable std::map<uint64_t, uint64_t> string_runs_[2];  // str, line_str
  mutable uint64_t long_scanned_ = 0;                    // under string_mu_
};

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_CONTEXT_H_
