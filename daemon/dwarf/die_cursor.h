// Walking a unit's DIEs (DWARF 5 section 7.5.2) in one forward pass: each DIE's code is looked
// up in the unit's abbreviation table, and its attribute values are read only when the caller
// asks (ForEachAttr), else skipped by their forms' sizes (one addition for an abbreviation
// whose forms all have sizes the unit header decides).
//
// The walk never goes back: every position it reads is after the one before, so it decodes
// each byte of the unit at most once, whatever the DIEs say. DW_AT_sibling is a hint for
// skipping a subtree the caller does not want (SkipChildren), taken only when it points
// forward, past the DIE's attributes, inside the unit, just after a null entry (the end of a
// children list); otherwise the subtree is walked (and its DIEs skipped). A lying hint that
// passes these checks can make the walk misread the subtree it skips, never revisit a byte.
//
//   DieCursor c(unit, budget);
//   while (true) {
//     Result<bool> more = c.Next();
//     if (!more) return more.error();
//     if (!*more) break;
//     if (c.die().tag() == DW_TAG_subprogram) c.ForEachAttr([&](const AttrValue& v) { ... });
//     else c.SkipChildren();
//   }
#ifndef JITSYM_DAEMON_DWARF_DIE_CURSOR_H_
#define JITSYM_DAEMON_DWARF_DIE_CURSOR_H_

#include <cstdint>

#include "daemon/dwarf/abbrev.h"
#include "daemon/dwarf/budget.h"
#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/errors.h"
#include "daemon/dwarf/form.h"
#include "daemon/dwarf/unit.h"
#include "daemon/util/byte_reader.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

struct Die {
  uint64_t offset = 0;  // in the unit's section
  const Abbrev* abbrev = nullptr;
  uint32_t depth = 0;  // 0: the unit DIE
  uint16_t tag() const { return abbrev->tag; }
  bool has_children() const { return abbrev->has_children; }
};

class DieCursor {
 public:
  // Before the unit DIE of `unit`. DIEs decoded are charged to `budget` in batches.
  DieCursor(const Unit& unit, Budget& budget);
  ~DieCursor();
  DieCursor(const DieCursor&) = delete;
  DieCursor& operator=(const DieCursor&) = delete;

  // Moves to the next DIE in preorder: true, or false past the unit's last DIE (the end of the
  // unit DIE's children, or of the unit's bytes). Errors (an unknown abbreviation code, a value
  // past the unit's end, the budget spent) are final.
  Result<bool> Next();
  const Die& die() const { return die_; }

  // Reads the current DIE's attribute values, in order, calling f(const AttrValue&) for each.
  // Once per DIE, before the next Next().
  template <typename F>
  Status ForEachAttr(F&& f);

  // The next Next() does not visit the current DIE's children.
  void SkipChildren() { skip_children_ = true; }

  // Positions the cursor at the DIE at `offset` (a reference's target), attributes unread;
  // Next() then returns false. kMalformed unless `offset` starts a DIE inside the unit.
  Status Seek(uint64_t offset);

 private:
  Status Charge();
  Status SkipAttrs();
  void NoteSibling(const AttrValue& v);
  // Where the DIE whose attributes end at pos_ lets the walk go on without its children, or 0.
  uint64_t SiblingJump() const;
  Error Fail(Error e) {
    failed_ = true;
    return e;
  }

  const Unit& unit_;
  Budget& budget_;
  std::string_view info_;
  uint64_t end_;
  FormParams params_;
  Die die_;
  uint64_t pos_;             // the next byte to read: after the code, or after the attributes
  uint32_t depth_ = 0;       // of the next DIE
  int64_t skip_depth_ = -1;  // DIEs deeper than this are being skipped
  uint64_t sibling_ = 0;     // the current DIE's DW_AT_sibling, absolute, or 0
  uint32_t pending_ = 0;     // DIEs not charged yet
  bool started_ = false;
  bool attrs_done_ = false;
  bool skip_children_ = false;
  bool done_ = false;
  bool failed_ = false;
};

template <typename F>
Status DieCursor::ForEachAttr(F&& f) {
  if (attrs_done_ || die_.abbrev == nullptr) {
    return MakeError(ErrorKind::kUsage, "DieCursor: attributes read twice or no DIE");
  }
  ByteReader r(info_.substr(pos_, end_ - pos_), unit_.order());
  AttrValue v;
  for (const AttrSpec& spec : unit_.abbrevs().Specs(*die_.abbrev)) {
    v.name = spec.name;
    if (Status s =
            ReadForm(r, spec.form, spec.implicit_const, params_, pos_, unit_.info_name(), &v);
        !s.ok()) {
      return Fail(std::move(s).error());
    }
    if (spec.name == DW_AT_sibling) NoteSibling(v);
    f(static_cast<const AttrValue&>(v));
  }
  pos_ += r.pos();
  attrs_done_ = true;
  return OkStatus();
}

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_DIE_CURSOR_H_
