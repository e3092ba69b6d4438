// pprof profile.proto as `jitsym pprof` will read it: gunzip if gzip'd (bounded), decode with
// limits, then check what callers rely on: a decoded profile passes Validate, every reference in
// it resolves, and it survives our encoder unchanged (Decode(Encode(Decode(x))) == Decode(x)).
// Gzip round-trips the inflated bytes too.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "client/profile_proto.h"

namespace {

void Touch(std::string_view s) {
  volatile unsigned sum = 0;
  for (char c : s) sum = sum + static_cast<unsigned char>(c);
  (void)sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jitsym::client::pprof;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  constexpr size_t kMaxOut = size_t{16} << 20;
  auto raw = MaybeGunzip(in, kMaxOut);
  if (!raw) {
    if (raw.error().offset > size) std::abort();
    return 0;
  }
  if (raw->size() <= (size_t{64} << 10)) {
    auto z = MaybeGunzip(Gzip(*raw), raw->size());
    if (!z || *z != *raw) std::abort();
  }
  // Small limits, so that the fuzzer reaches them.
  DecodeLimits limits;
  limits.max_samples = 1 << 16;
  limits.max_locations = 1 << 16;
  limits.max_functions = 1 << 16;
  limits.max_mappings = 1 << 10;
  limits.max_strings = 1 << 16;
  limits.max_items = 1 << 20;
  auto p = Decode(*raw, limits);
  if (!p) {
    if (p.error().offset > raw->size() || p.error().message.empty()) std::abort();
    return 0;
  }
  if (!Validate(*p)) std::abort();
  const ProfileIndex index(*p);
  for (const Sample& s : p->sample) {
    if (s.value.size() != p->sample_type.size()) std::abort();
    for (uint64_t id : s.location_id) {
      const Location* l = index.location(id);
      if (l == nullptr) std::abort();
      if (l->mapping_id != 0) {
        const Mapping* m = index.mapping(l->mapping_id);
        if (m == nullptr) std::abort();
        Touch(p->string_table.at(static_cast<size_t>(m->filename)));
      }
      for (const Line& line : l->line) {
        if (line.function_id == 0) continue;
        const Function* f = index.function(line.function_id);
        if (f == nullptr) std::abort();
        Touch(p->string_table.at(static_cast<size_t>(f->name)));
      }
    }
    for (const Label& l : s.label) Touch(p->string_table.at(static_cast<size_t>(l.key)));
  }
  auto again = Decode(Encode(*p), limits);
  if (!again || !(*again == *p)) std::abort();
  return 0;
}
