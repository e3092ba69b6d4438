// Protocol response lines (what the client reads). A response that decodes must encode and
// decode again, in both forms for lookups (plain, and compact with a string table).
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "proto/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  jitsym::Result<jitsym::proto::Response> r = jitsym::proto::DecodeResponse(line);
  if (r) {
    std::string encoded;
    jitsym::proto::EncodeResponse(*r, &encoded);
    encoded.pop_back();
    if (!jitsym::proto::DecodeResponse(encoded)) std::abort();
    if (auto* lookup = std::get_if<jitsym::proto::LookupResponse>(&r->body)) {
      lookup->strings = !lookup->strings;
      encoded.clear();
      jitsym::proto::EncodeResponse(*r, &encoded);
      encoded.pop_back();
      if (!jitsym::proto::DecodeResponse(encoded)) std::abort();
    }
  }
  // The decoder that reuses storage, fed the same line twice.
  jitsym::proto::Response reused;
  (void)jitsym::proto::DecodeResponseInto(line, &reused);
  (void)jitsym::proto::DecodeResponseInto(line, &reused);
  return 0;
}
