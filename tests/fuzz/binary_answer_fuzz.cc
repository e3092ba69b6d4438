// Binary lookup answers (docs/protocol.md, *Binary answers*). Even first byte: the rest is the
// frames after a binary header line, as a hostile or broken daemon may send them (also into a
// connection's string table, answer after answer); decoding never crashes, reads past them or
// allocates what their lengths claim. Odd first byte: the
// rest makes results (strings cut from the input, invalid UTF-8 and control bytes included),
// which are encoded in frames of a size the input picks, the string table forgotten between
// some of them, decoded, and must equal what the JSON answer of the same results decodes to.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proto/protocol.h"

namespace {

using jitsym::proto::Frame;
using jitsym::proto::LookupResponse;
using jitsym::proto::LookupResult;
using jitsym::proto::Origin;
using jitsym::proto::Reason;
using jitsym::proto::Response;

// Reads the input front to back; past its end every read is 0 (or empty).
class Bytes {
 public:
  explicit Bytes(std::string_view in) : in_(in) {}
  bool empty() const { return pos_ >= in_.size(); }
  uint8_t Byte() { return pos_ < in_.size() ? static_cast<uint8_t>(in_[pos_++]) : 0; }
  // 0 to 8 bytes, big-endian: small numbers and ones that need all 64 bits.
  uint64_t Number() {
    uint64_t v = 0;
    const int n = Byte() % 9;
    for (int i = 0; i < n; ++i) v = (v << 8) | Byte();
    return v;
  }
  // A length byte, a scale byte (one in four: 64 times longer), then that many input bytes.
  std::string_view Text() {
    const size_t length = Byte();
    const size_t scale = Byte() % 4 == 0 ? 64 : 1;
    const size_t n = std::min(length * scale, in_.size() - std::min(pos_, in_.size()));
    const std::string_view s = in_.substr(std::min(pos_, in_.size()), n);
    pos_ += n;
    return s;
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

// Every member a client sees, as text.
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

void Same(const std::vector<LookupResult>& a, const std::vector<LookupResult>& b) {
  if (a.size() != b.size()) __builtin_trap();
  for (size_t i = 0; i < a.size(); ++i) {
    if (Describe(a[i]) != Describe(b[i])) __builtin_trap();
  }
}

LookupResult MakeResult(Bytes& in) {
  LookupResult r;
  const uint8_t kind = in.Byte();
  r.addr = in.Number();
  if (kind % 4 == 0) {  // a miss
    r.reason = static_cast<Reason>(in.Byte() % 13);
    if (kind & 0x10) r.detail = in.Text();
  } else if (kind % 4 == 1) {  // a per-address error, the input echoed or not
    r.error = in.Text();
    if (r.error.empty()) r.error = "invalid address";
    if (kind & 0x10) r.raw = in.Text();
    if (kind & 0x20) r.reason = Reason::kPermissionDenied;
  } else {  // found
    r.found = true;
    r.name = in.Text();
    r.offset = in.Number();
    r.start = in.Number();
    r.size = in.Number();
    r.origin = static_cast<Origin>(in.Byte() % 7);
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
    const uint8_t extra = in.Byte();
    if (extra & 1) r.clone = in.Text();
    if (extra & 2) r.error = in.Text();
    // A found answer that says what it lacks (no_debug_info: split DWARF missing).
    if (extra & 4) r.reason = static_cast<Reason>(in.Byte() % 13);
    if (extra & 8) r.detail = in.Text();
  }
  return r;
}

// Input: 4 control bytes (frame size, fields (3 bytes)), then results to the end.
void RoundTrip(Bytes& in) {
  const size_t target = size_t{1} << (in.Byte() % 22);
  const uint8_t how = in.Byte();
  const uint32_t fields =
      how & 1 ? jitsym::proto::kAllFields : (uint32_t{in.Byte()} << 8 | in.Byte()) & 0x1fffu;
  const size_t forget_every = 1 + how / 2 % 4;
  std::vector<LookupResult> results;
  while (!in.empty() && results.size() < 4096) results.push_back(MakeResult(in));

  // The reference: the JSON answer, decoded; its compact form ("strings":true) decodes to the
  // same.
  Response response{"7", LookupResponse{}};
  auto& lookup = std::get<LookupResponse>(response.body);
  lookup.results = results;
  lookup.fields = fields;
  auto json_answer = [&](bool compact) {
    lookup.strings = compact;
    std::string json;
    jitsym::proto::EncodeResponse(response, &json);
    if (json.empty() || json.back() != '\n') __builtin_trap();
    json.pop_back();
    auto decoded = jitsym::proto::DecodeResponse(json);
    if (!decoded || !std::holds_alternative<LookupResponse>(decoded->body)) __builtin_trap();
    return std::move(*decoded);
  };
  const Response plain = json_answer(false);
  const std::vector<LookupResult>& want = std::get<LookupResponse>(plain.body).results;
  Same(want, std::get<LookupResponse>(json_answer(true).body).results);

  // Frames of the size picked, strings forgotten every few frames, then the end marker.
  std::string frames;
  jitsym::proto::BinaryAnswerEncoder encoder;
  std::span<const LookupResult> rest(results);
  for (size_t count = 1; !rest.empty(); ++count) {
    const size_t n = encoder.EncodeFrame(rest, fields, target, &frames);
    if (n == 0 || n > rest.size()) __builtin_trap();
    rest = rest.subspan(n);
    if (count % forget_every == 0) encoder.ForgetStrings();
  }
  jitsym::proto::EncodeBinaryLookupEnd(&frames);
  LookupResponse decoded;
  if (!jitsym::proto::DecodeBinaryLookupFrames(frames, &decoded)) __builtin_trap();
  Same(want, decoded.results);

  // The daemon's whole answer (header line, 1 MiB frames), decoded as the client does, into
  // the response the previous decode filled (its storage reused).
  lookup.strings = false;
  lookup.binary = true;
  std::string binary;
  jitsym::proto::EncodeResponse(response, &binary);
  const size_t nl = binary.find('\n');
  if (nl == std::string::npos) __builtin_trap();
  Response header{"", std::move(decoded)};
  if (!jitsym::proto::DecodeResponseInto(std::string_view(binary).substr(0, nl), &header)) {
    __builtin_trap();
  }
  auto* got = std::get_if<LookupResponse>(&header.body);
  if (got == nullptr || !got->binary || header.id_json != "7") __builtin_trap();
  const std::string_view rest_of_answer = std::string_view(binary).substr(nl + 1);
  if (!jitsym::proto::DecodeBinaryLookupFrames(rest_of_answer, got)) __builtin_trap();
  Same(want, got->results);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    // Twice into the same response: the second decode reuses the first one's results.
    LookupResponse lookup;
    (void)jitsym::proto::DecodeBinaryLookupFrames(rest, &lookup);
    (void)jitsym::proto::DecodeBinaryLookupFrames(rest.substr(rest.size() / 2), &lookup);
    // Into a connection's table, twice: the second answer may refer to what the first added.
    if (data[0] % 4 == 2) {
      jitsym::proto::ConnectionStrings table;
      LookupResponse a, b;
      (void)jitsym::proto::DecodeBinaryLookupFrames(rest, &a, &table);
      (void)jitsym::proto::DecodeBinaryLookupFrames(rest.substr(rest.size() / 3), &b, &table);
    }
    return 0;
  }
  Bytes in(rest);
  RoundTrip(in);
  return 0;
}
