// The forward-only DIE walk (die_cursor.h).
#include "daemon/dwarf/die_cursor.h"

#include <string>

namespace jitsym::dwarf {
namespace {

constexpr uint32_t kChargeBatch = 256;

}  // namespace

DieCursor::DieCursor(const Unit& unit, Budget& budget)
    : unit_(unit),
      budget_(budget),
      info_(unit.info()),
      end_(unit.header().end),
      params_(unit.params()),
      pos_(unit.header().first_die) {}

DieCursor::~DieCursor() {
  if (pending_ > 0) (void)budget_.ChargeDies(pending_);
}

Status DieCursor::Charge() {
  const uint32_t n = pending_;
  pending_ = 0;
  return budget_.ChargeDies(n);
}

void DieCursor::NoteSibling(const AttrValue& v) {
  switch (v.form) {
    case DW_FORM_ref1:
    case DW_FORM_ref2:
    case DW_FORM_ref4:
    case DW_FORM_ref8:
    case DW_FORM_ref_udata:
      sibling_ = v.u < end_ - unit_.header().offset ? unit_.header().offset + v.u : 0;
      break;
    case DW_FORM_ref_addr:
      if (!unit_.header().in_types) sibling_ = v.u;
      break;
    default:
      break;
  }
}

uint64_t DieCursor::SiblingJump() const {
  // Forward, past the attributes and at least one null entry, inside the unit, and right after
  // a null entry: where a children list ends.
  if (sibling_ > pos_ && sibling_ <= end_ && info_[sibling_ - 1] == '\0') return sibling_;
  return 0;
}

Status DieCursor::SkipAttrs() {
  const Abbrev& a = *die_.abbrev;
  if (a.fixed_size >= 0 && !a.has_sibling) {
    if (static_cast<uint64_t>(a.fixed_size) > end_ - pos_) {
      return Fail(Malformed(unit_.info_name(), pos_, "DIE's attributes past the unit's end"));
    }
    pos_ += static_cast<uint64_t>(a.fixed_size);
    attrs_done_ = true;
    return OkStatus();
  }
  ByteReader r(info_.substr(pos_, end_ - pos_), unit_.order());
  for (const AttrSpec& spec : unit_.abbrevs().Specs(a)) {
    if (spec.name == DW_AT_sibling) {
      AttrValue v;
      if (Status s =
              ReadForm(r, spec.form, spec.implicit_const, params_, pos_, unit_.info_name(), &v);
          !s.ok()) {
        return Fail(std::move(s).error());
      }
      NoteSibling(v);
    } else if (Status s = SkipForm(r, spec.form, params_, pos_, unit_.info_name()); !s.ok()) {
      return Fail(std::move(s).error());
    }
  }
  pos_ += r.pos();
  attrs_done_ = true;
  return OkStatus();
}

Result<bool> DieCursor::Next() {
  if (failed_) return MakeError(ErrorKind::kUsage, "DieCursor: used after an error");
  if (done_) return false;
  if (!started_) {
    started_ = true;
    depth_ = 0;
  } else {
    if (!attrs_done_) {
      if (Status s = SkipAttrs(); !s.ok()) return std::move(s).error();
    }
    depth_ = die_.depth;
    if (die_.has_children()) {
      if (!skip_children_) {
        ++depth_;
      } else if (const uint64_t jump = SiblingJump(); jump != 0) {
        pos_ = jump;
      } else {
        skip_depth_ = die_.depth;
        ++depth_;
      }
    }
  }
  skip_children_ = false;
  // Every turn of this loop reads at least one byte at a higher offset than the last.
  for (;;) {
    if (pos_ >= end_) {
      done_ = true;  // the unit ends (a producer may leave out the last null entries)
      return false;
    }
    const uint64_t at = pos_;
    ByteReader r(info_.substr(pos_, end_ - pos_), unit_.order());
    const uint64_t code = r.Uleb();
    if (!r.ok()) return Fail(Malformed(unit_.info_name(), at, "DIE code past the unit's end"));
    pos_ += r.pos();
    if (code == 0) {
      // A null entry ends the children list of depth_ - 1; the unit DIE's ends the walk.
      if (depth_ <= 1) {
        done_ = true;
        return false;
      }
      --depth_;
      if (skip_depth_ >= 0 && depth_ <= skip_depth_) skip_depth_ = -1;
      continue;
    }
    const Abbrev* a = unit_.abbrevs().Find(code);
    if (a == nullptr) {
      return Fail(Malformed(unit_.info_name(), at,
                            "abbreviation code " + std::to_string(code) + " unknown"));
    }
    die_ = Die{at, a, depth_};
    attrs_done_ = false;
    sibling_ = 0;
    if (++pending_ >= kChargeBatch) {
      if (Status s = Charge(); !s.ok()) return Fail(std::move(s).error());
    }
    if (skip_depth_ >= 0 && depth_ > static_cast<uint64_t>(skip_depth_)) {
      // Inside a subtree being skipped: its DIEs are passed over, their own subtrees jumped
      // where their sibling hints allow.
      if (Status s = SkipAttrs(); !s.ok()) return std::move(s).error();
      if (a->has_children) {
        if (const uint64_t jump = SiblingJump(); jump != 0) {
          pos_ = jump;
        } else {
          ++depth_;
        }
      }
      continue;
    }
    if (depth_ == 0 && started_ && at != unit_.header().first_die) {
      done_ = true;  // a second top-level DIE: the unit DIE had no children
      return false;
    }
    return true;
  }
}

Status DieCursor::Seek(uint64_t offset) {
  if (!unit_.Holds(offset)) {
    return Fail(Malformed(unit_.info_name(), offset, "reference outside its unit"));
  }
  ByteReader r(info_.substr(offset, end_ - offset), unit_.order());
  const uint64_t code = r.Uleb();
  const Abbrev* a = r.ok() && code != 0 ? unit_.abbrevs().Find(code) : nullptr;
  if (a == nullptr) {
    return Fail(Malformed(unit_.info_name(), offset,
                          "reference to no DIE (code " + std::to_string(code) + ")"));
  }
  started_ = true;
  done_ = true;
  die_ = Die{offset, a, 0};
  pos_ = offset + r.pos();
  attrs_done_ = false;
  sibling_ = 0;
  if (++pending_ >= kChargeBatch) {
    if (Status s = Charge(); !s.ok()) return Fail(std::move(s).error());
  }
  return OkStatus();
}

}  // namespace jitsym::dwarf
