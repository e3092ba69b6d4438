// Protocol request lines (what any local user can send to the daemon). A request that decodes
// must encode and decode again.
#include <cstdlib>
#include <string>
#include <string_view>

#include "proto/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  jitsym::proto::DecodeRequestResult r = jitsym::proto::DecodeRequest(line);
  if (r.request) {
    std::string encoded;
    jitsym::proto::EncodeRequest(*r.request, &encoded);
    encoded.pop_back();  // the newline
    if (!jitsym::proto::DecodeRequest(encoded).request) std::abort();
  } else if (r.error) {
    std::string encoded;
    jitsym::proto::EncodeResponse(*r.error, &encoded);
  }
  return 0;
}
