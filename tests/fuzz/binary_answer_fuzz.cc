// Binary lookup answers (docs/protocol.md, *Binary answers*). Even first byte: the rest is the
// frames after a binary header line, as a hostile or broken daemon may send them; decoding
// never crashes or allocates what the lengths claim. Odd first byte: the rest makes results
// (strings cut from the input, invalid UTF-8 and control bytes included), which are encoded in
// frames of a size the input picks, decoded, and must equal what the JSON answer decodes to.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/protocol.h"

namespace {

using jitsym::proto::Frame;
using jitsym::proto::LookupResponse;
using jitsym::proto::LookupResult;

class Bytes {
 public:
  explicit Bytes(std::string_view in) : in_(in) {}
  bool empty() const { return pos_ >= in_.size(); }
  uint8_t Byte() { return pos_ < in_.size() ? static_cast<uint8_t>(in_[pos_++]) : 0; }
  uint64_t Number() {
    uint64_t v = 0;
    const int n = Byte() % 9;
    for (int i = 0; i < n; ++i) v = (v << 8) | Byte();
    return v;
  }
  std::string_view Text() {
    const size_t n = std::min<size_t>(Byte() * (Byte() % 4 == 0 ? 64 : 1), in_.size() - pos_);
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

std::string Describe(const LookupResult& r) {
  std::string s =
      std::to_string(r.addr) + (r.found ? "T" : "F") + std::to_string(static_cast<int>(r.reason)) +
      "|" + r.error + "|" + r.raw + "|" + r.detail + "|" + std::string(r.name) + "|" +
      std::to_string(r.offset) + "|" + std::to_string(r.start) + "|" + std::to_string(r.size) +
      "|" + std::to_string(static_cast<int>(r.origin)) + "|" + std::string(r.image) + "|" +
      std::string(r.source) + "|" + std::string(r.file) + "|" + std::to_string(r.line) + "|" +
      std::to_string(r.column) + "|" + (r.loaded_at ? std::to_string(*r.loaded_at) : "-") + "|" +
      (r.incarnation ? std::to_string(*r.incarnation) : "-") + "|" + std::string(r.build_id) + "|" +
      std::string(r.clone) + "|";
  for (const Frame& f : r.frames) {
    s += "[" + std::string(f.name) + "," + std::string(f.file) + "," + std::to_string(f.line) +
         "," + std::to_string(f.column) + "]";
  }
  return s;
}

void RoundTrip(Bytes& in) {
  std::vector<LookupResult> results;
  while (!in.empty() && results.size() < 512) {
    LookupResult& r = results.emplace_back();
    const uint8_t kind = in.Byte();
    r.addr = in.Number();
    if (kind % 4 == 0) {
      r.reason = static_cast<jitsym::proto::Reason>(in.Byte() % 13);
      if (kind & 0x10) r.detail = in.Text();
    } else if (kind % 4 == 1) {
      r.error = in.Text();
      if (r.error.empty()) r.error = "invalid address";
      if (kind & 0x10) r.raw = in.Text();
    } else {
      r.found = true;
      r.name = in.Text();
      r.offset = in.Number();
      r.start = in.Number();
      r.size = in.Number();
      r.origin = static_cast<jitsym::proto::Origin>(in.Byte() % 7);
      if (kind & 0x04) r.source = in.Text();
      if (kind & 0x08) r.file = in.Text();
      if (kind & 0x10) r.loaded_at = in.Number();
      if (kind & 0x20) r.incarnation = in.Number();
      r.line = static_cast<uint32_t>(in.Number());
      r.column = static_cast<uint32_t>(in.Number());
      if (kind & 0x40) r.image = in.Text();
      if (kind & 0x80) r.build_id = in.Text();
      for (int f = in.Byte() % 6; f > 0; --f) {
        r.frames.push_back({in.Text(), in.Text(), static_cast<uint32_t>(in.Number()),
                            static_cast<uint32_t>(in.Number())});
      }
      if (in.Byte() % 4 == 0) r.clone = in.Text();
    }
  }
  const uint32_t fields = jitsym::proto::kAllFields;
  const size_t target = size_t{1} << (in.Byte() % 21);
  std::string frames;
  jitsym::proto::BinaryAnswerEncoder encoder;
  std::span<const LookupResult> rest(results);
  for (size_t count = 1; !rest.empty(); ++count) {
    const size_t n = encoder.EncodeFrame(rest, fields, target, &frames);
    if (n == 0) __builtin_trap();
    rest = rest.subspan(n);
    if (count % 3 == 0) encoder.ForgetStrings();
  }
  jitsym::proto::EncodeBinaryLookupEnd(&frames);
  LookupResponse decoded;
  if (!jitsym::proto::DecodeBinaryLookupFrames(frames, &decoded)) __builtin_trap();
  if (decoded.results.size() != results.size()) __builtin_trap();
  for (size_t i = 0; i < results.size(); ++i) {
    std::string json;
    jitsym::proto::EncodeLookupResult(results[i], &json, fields);
    const auto ref = jitsym::proto::DecodeResponse("{\"ok\":true,\"results\":[" + json + "]}");
    if (!ref) __builtin_trap();
    const auto& want = std::get<LookupResponse>(ref->body).results;
    if (want.size() != 1 || Describe(want[0]) != Describe(decoded.results[i])) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    LookupResponse lookup;
    (void)jitsym::proto::DecodeBinaryLookupFrames(rest, &lookup);
    return 0;
  }
  Bytes in(rest);
  RoundTrip(in);
  return 0;
}
