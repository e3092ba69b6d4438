// gperftools CPU profiles as jitsym pprof reads them: parse, then write the symbolized form
// and parse its profile part again (it must parse: the writer only adjusts caller pcs).
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "client/gperftools_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jitsym::client;
  auto profile =
      ParseCpuProfile(std::string_view(reinterpret_cast<const char*>(data), size), size_t{1} << 20);
  if (!profile) return 0;
  for (const auto& s : profile->samples) {
    if (s.first + s.depth > profile->pcs.size()) std::abort();
    if (s.depth > 0) (void)profile->FindMapping(profile->pcs_of(s)[0]);
  }
  std::map<uint64_t, std::vector<std::string>> names;
  if (!profile->pcs.empty()) names[profile->pcs[0]] = {"f--g\n", "", "-"};
  const std::string again = WriteCpuProfileWithCallerPcsAdjusted(*profile);
  if (!ParseCpuProfile(again, size_t{1} << 20)) std::abort();
  (void)WriteSymbolizedProfile(*profile, "/bin/x", names);
  return 0;
}
