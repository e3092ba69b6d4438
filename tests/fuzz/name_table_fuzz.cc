// The name table against a model (a std::map from cut name to handle): the input is a program of
// Intern and Reserve operations whose name lengths the fuzzer picks, from a handful of bytes, up
// to 2 MiB, and around every arena block size and the 16 KiB cut. Every handle must read back
// its (cut) name, equal names one handle, until the end of the run (blocks never move).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <string>
#include <string_view>

#include "daemon/index/name_table.h"

namespace {

using jitsym::index::NameTable;

constexpr size_t kLengths[] = {0,     1,     2,     4093,  4094,  4095,    4096,    4097,
                               8189,  8190,  8191,  8192,  8193,  16381,   16382,   16383,
                               16384, 16385, 16386, 32768, 65536, 1 << 20, 2 << 20, 12287};
constexpr size_t kMaxBytesPerInput = size_t{8} << 20;  // keeps an input under ~10 ms

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  NameTable names;
  std::map<std::string, uint32_t, std::less<>> model;
  size_t bytes = 0;
  std::string name;
  while (size >= 4 && bytes < kMaxBytesPerInput) {
    const uint8_t op = data[0];
    const uint16_t arg = static_cast<uint16_t>(data[1] | data[2] << 8);
    const uint8_t fill = data[3];
    data += 4;
    size -= 4;
    if ((op & 0xe0) == 0xe0) {
      names.Reserve(arg);
      continue;
    }
    // The length: one of the sizes above (plus a little), or any up to 64 KiB.
    const size_t len = (op & 0x80) ? kLengths[arg % std::size(kLengths)] + (op & 0x7) : arg;
    // The name: `fill` repeated, with the input's next bytes (up to 8) at its start, so that
    // names of equal length differ and long names still cost only four bytes of input.
    name.assign(len, static_cast<char>(fill));
    const size_t own = std::min({len, size, size_t{8}});
    if (own > 0) name.replace(0, own, reinterpret_cast<const char*>(data), own);
    data += own;
    size -= own;
    bytes += len;
    const uint32_t handle =
        (op & 0x40) ? names.Intern(name, NameTable::Hash(name)) : names.Intern(name);
    const std::string_view cut = std::string_view(name).substr(0, NameTable::kMaxNameLength);
    if (names.Get(handle) != cut) std::abort();
    auto [it, inserted] = model.try_emplace(std::string(cut), handle);
    if (!inserted && it->second != handle) std::abort();  // the same name, two handles
    if (names.size() != model.size()) std::abort();
  }
  for (const auto& [stored, handle] : model) {
    if (names.Get(handle) != stored) std::abort();
  }
  return 0;
}
