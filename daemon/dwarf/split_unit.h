// A skeleton unit's split unit (split DWARF: -gsplit-dwarf), from a .dwo file's or a .dwp
// package's Context the caller made from bytes it read itself: the library opens nothing.
//
// The split unit is the one whose dwo id is the skeleton's: a package's index row (the
// signature), a DWARF 5 unit header, or, in a DWARF 4 .dwo (GNU split DWARF), the
// DW_AT_GNU_dwo_id of a split compile unit's DIE. Its indexed addresses, GNU ranges base and base
// address come from the skeleton (unit.h).
#ifndef JITSYM_DAEMON_DWARF_SPLIT_UNIT_H_
#define JITSYM_DAEMON_DWARF_SPLIT_UNIT_H_

#include <optional>

#include "daemon/dwarf/budget.h"
#include "daemon/dwarf/context.h"
#include "daemon/dwarf/unit.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

// The split unit of `skeleton` in `split`, opened; nullopt when `split` holds none with the
// skeleton's dwo id (not found is an answer); an error when the one there cannot be read.
// `skeleton` must outlive the unit.
Result<std::optional<Unit>> OpenSplitUnit(const Unit& skeleton, const Context& split,
                                          Budget& budget);

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_SPLIT_UNIT_H_
