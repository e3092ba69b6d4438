// The demangler of native names (daemon/native/demangle.h): any bytes as a symbol name. The
// answer is the name unchanged or a text no longer than kMaxDemangledBytes (plus the few bytes
// a clone suffix adds), whatever the nesting or back-references; the C++ runtime's demangler
// alone is held to the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/native/demangle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using jitsym::native::kMaxDemangledBytes;
  const std::string_view name(reinterpret_cast<const char*>(data), size);
  const std::string out = jitsym::native::Demangle(name);
  if (out != name && out.size() > kMaxDemangledBytes + 64) __builtin_trap();
  if (auto gnu = jitsym::native::RuntimeDemangle(name)) {
    if (gnu->size() > kMaxDemangledBytes + 64) __builtin_trap();
  }
  return 0;
}
