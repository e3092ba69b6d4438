// Finding a skeleton's split unit (split_unit.h).
#include "daemon/dwarf/split_unit.h"

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/errors.h"

namespace jitsym::dwarf {

Result<std::optional<Unit>> OpenSplitUnit(const Unit& skeleton, const Context& split,
                                          Budget& budget) {
  if (!skeleton.dwo_id()) {
    return Malformed(skeleton.info_name(), skeleton.header().offset, "skeleton without a dwo id");
  }
  const uint64_t id = *skeleton.dwo_id();
  auto open = [&](const UnitHeader& h) -> Result<std::optional<Unit>> {
    Result<Unit> u = Unit::Open(split, h, budget, &skeleton);
    if (!u) return std::move(u).error();
    // A package row or header names the id; the unit DIE must not say otherwise.
    if (u->dwo_id() && *u->dwo_id() != id) return std::optional<Unit>();
    return std::optional<Unit>(std::move(*u));
  };
  if (const UnitHeader* h = split.SplitUnitById(id); h != nullptr) return open(*h);
  if (split.package()) return std::optional<Unit>();  // the index is the package's list
  // DWARF 4 .dwo files name the id in the unit DIE only (one unit per file, as a rule).
  for (const UnitHeader& h : split.units()) {
    if (h.version >= 5 || h.unit_type != DW_UT_split_compile) continue;
    Result<Unit> u = Unit::Open(split, h, budget, &skeleton);
    if (!u) return std::move(u).error();
    if (u->dwo_id() == id) return std::optional<Unit>(std::move(*u));
  }
  return std::optional<Unit>();
}

}  // namespace jitsym::dwarf
