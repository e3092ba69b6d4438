// What a parse worker sends the daemon, and what the daemon sends it: a worker taken over by
// its file may send anything. The first byte picks the decoder (0: a symbolize reply, 1: a
// file request, 2: a symbolize request, 3: a file reply, 4: frames on a socket); a message
// that decodes must encode to bytes that decode to the same, and a reply's every string id
// must lie within the ids it reaches.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "daemon/parse_worker/channel.h"
#include "daemon/parse_worker/messages.h"

namespace pw = jitsym::parse_worker;

namespace {

template <typename Decode>
void RoundTrip(std::string_view bytes, Decode decode) {
  auto m = decode(bytes);
  if (!m) return;
  const std::string again = pw::Encode(*m);
  auto back = decode(again);
  if (!back || pw::Encode(*back) != again) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: {
      RoundTrip(bytes, pw::DecodeSymbolizeReply);
      auto r = pw::DecodeSymbolizeReply(bytes);
      if (!r) break;
      const uint64_t ids = uint64_t{r->strings_base} + r->strings.size();
      for (const pw::AddressAnswer& a : r->answers) {
        if (a.name >= ids || a.clone >= ids || a.missing >= ids) std::abort();
        if (uint64_t{a.first_frame} + a.frame_count > r->frames.size()) std::abort();
      }
      for (const pw::AnswerFrame& f : r->frames) {
        if (f.name >= ids || f.file >= ids) std::abort();
      }
      break;
    }
    case 1:
      RoundTrip(bytes, pw::DecodeFileOpRequest);
      break;
    case 2:
      RoundTrip(bytes, pw::DecodeSymbolizeRequest);
      break;
    case 3:
      RoundTrip(bytes, pw::DecodeFileOpReply);
      break;
    default: {
      // Frames as read from a socket, whatever the bytes say about their lengths.
      if (bytes.size() > 65536) break;
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) break;
      jitsym::os::UniqueFd a(sv[0]), b(sv[1]);
      if (::write(a.get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
        break;
      }
      a.reset();
      for (int k = 0; k < 64; ++k) {
        jitsym::Result<pw::Frame> f = pw::ReceiveFrame(b.get());
        if (!f) break;
        if (f->payload.size() > pw::kMaxFrame) std::abort();
      }
    }
  }
  return 0;
}
