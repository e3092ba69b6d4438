// The DWARF reader over hostile sections of up to three files (tests/fuzz/dwarf_fuzz.h): a main
// file, the .dwo or .dwp its skeletons' split units are in, and its supplementary (dwz) file.
// Every unit opened, split units linked by dwo id, trees and line tables read and checked.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/dwarf_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jitsym;
  const fuzz::FuzzFiles f = fuzz::FuzzFiles::Parse(data, size);
  dwarf::Context main(f.files[0]);
  dwarf::Context split(f.files[1]);
  dwarf::Context sup(f.files[2]);
  if (f.present[2]) main.set_supplementary(&sup);
  dwarf::Budget budget(fuzz::FuzzLimits());
  fuzz::ReadEverything(main, f.present[1] ? &split : nullptr, budget);
  // The split file's own units too (a .dwo read as the main file).
  fuzz::ReadEverything(split, nullptr, budget);
  return 0;
}
