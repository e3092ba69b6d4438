// Binary lookup answers, encoding side (the daemon's hot path when a client asks for them).
// Sends exactly what the JSON encoder sends for a result: the same members under the same
// conditions, strings with the same U+FFFD replacements, so that a client decodes the same
// answer from either form.
#include <cstring>
#include <string>

#include "proto/binary_answer.h"
#include "proto/json_writer.h"
#include "proto/protocol.h"
#include "proto/string_interner.h"

namespace jitsym::proto {
namespace {

using namespace binary;  // NOLINT: the member bits

void AppendUleb(uint64_t v, std::string* out) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

void AppendU32(uint32_t v, char* at) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<char>(v >> (8 * i));
}

// Text as JSON would carry it: bytes that are not well-formed UTF-8 become U+FFFD.
void AppendText(std::string_view s, std::string* out) {
  if (json::IsWellFormedUtf8(s)) {
    AppendUleb(s.size(), out);
    out->append(s);
    return;
  }
  std::string clean;
  json::AppendWellFormedUtf8(s, &clean);
  AppendUleb(clean.size(), out);
  out->append(clean);
}

class FrameWriter {
 public:
  FrameWriter(StringInterner* strings, uint32_t base, uint64_t* text_bytes, std::string* out)
      : out_(out), strings_(*strings), base_(base), text_bytes_(*text_bytes) {}

  void String(std::string_view s) {
    const StringInterner::Entry e = strings_.Intern(s);
    if (!e.added) {
      AppendUleb(uint64_t{base_} + e.index + 1, out_);
      return;
    }
    out_->push_back('\0');
    AppendText(s, out_);
    text_bytes_ += s.size();
  }

  void Result(const LookupResult& r, uint32_t fields) {
    const bool raw = !r.error.empty() && !r.raw.empty();
    uint32_t m = raw ? uint32_t{kRaw} : 0;
    if (!r.found) {
      if (r.reason != Reason::kNone) m |= kReason;
      if (!r.detail.empty()) m |= kDetail;
      if (!r.error.empty()) m |= kError;
    } else {
      m |= kFound;
      if (fields & kFieldName) m |= kName;
      if (fields & kFieldOffset) m |= kOffset;
      if (fields & kFieldStart) m |= kStart;
      if (fields & kFieldSize) m |= kSize;
      if (fields & kFieldOrigin) m |= kOrigin;
      if ((fields & kFieldSource) && !r.source.empty()) m |= kSource;
      if ((fields & kFieldLoadedAt) && r.loaded_at) m |= kLoadedAt;
      if ((fields & kFieldIncarnation) && r.incarnation) m |= kIncarnation;
      if (fields & kFieldPosition) {
        if (!r.file.empty()) m |= kFile;
        if (r.line != 0) m |= kLine;
        if (r.column != 0) m |= kColumn;
      }
      if ((fields & kFieldImage) && !r.image.empty()) m |= kImage;
      if ((fields & kFieldBuildId) && !r.build_id.empty()) m |= kBuildId;
      if ((fields & kFieldFrames) && !r.frames.empty()) m |= kFrames;
      if ((fields & kFieldClone) && !r.clone.empty()) m |= kClone;
      // A found answer that lacks what debug info would give says why, as in JSON.
      if (r.reason != Reason::kNone) m |= kReason;
      if (!r.detail.empty()) m |= kDetail;
      if (!r.error.empty()) m |= kError;
    }
    AppendUleb(m, out_);
    if (raw) {
      AppendText(r.raw, out_);
    } else {
      AppendUleb(r.addr, out_);
    }
    if (m & kName) String(r.name);
    if (m & kOffset) AppendUleb(r.offset, out_);
    if (m & kStart) AppendUleb(r.start, out_);
    if (m & kSize) AppendUleb(r.size, out_);
    if (m & kOrigin) String(OriginName(r.origin));
    if (m & kSource) String(r.source);
    if (m & kLoadedAt) AppendUleb(*r.loaded_at, out_);
    if (m & kIncarnation) AppendUleb(*r.incarnation, out_);
    if (m & kFile) String(r.file);
    if (m & kLine) AppendUleb(r.line, out_);
    if (m & kColumn) AppendUleb(r.column, out_);
    if (m & kImage) String(r.image);
    if (m & kBuildId) String(r.build_id);
    if (m & kFrames) {
      AppendUleb(r.frames.size(), out_);
      for (const Frame& f : r.frames) {
        String(f.name);
        String(f.file);
        AppendUleb(f.line, out_);
        AppendUleb(f.column, out_);
      }
    }
    if (m & kClone) String(r.clone);
    if (m & kReason) String(ReasonName(r.reason));
    if (m & kDetail) AppendText(r.detail, out_);
    if (m & kError) AppendText(r.error, out_);
  }

 private:
  std::string* out_;
  StringInterner& strings_;
  uint32_t base_;
  uint64_t& text_bytes_;
};

}  // namespace

void EncodeBinaryLookupBegin(std::string_view id_json, std::string* out,
                             std::optional<uint64_t> strings_kept) {
  out->append("{\"v\":1");
  if (!id_json.empty()) {
    out->append(",\"id\":");
    out->append(id_json);
  }
  out->append(",\"ok\":true,\"encoding\":\"binary\"");
  if (strings_kept) {
    out->append(",\"strings_kept\":");
    out->append(std::to_string(*strings_kept));
  }
  out->append("}\n");
}

size_t BinaryAnswerEncoder::EncodeFrame(std::span<const LookupResult> results, uint32_t fields,
                                        size_t max_bytes, std::string* out) {
  const size_t start = out->size();
  out->append(2 * kBinaryFramePrefixBytes, '\0');  // length and count, written at the end
  FrameWriter writer(&strings_, base_, &text_bytes_, out);
  size_t n = 0;
  while (n < results.size() && (n == 0 || out->size() - start < max_bytes)) {
    writer.Result(results[n++], fields);
  }
  const size_t length = out->size() - start - kBinaryFramePrefixBytes;
  AppendU32(static_cast<uint32_t>(length), out->data() + start);
  AppendU32(static_cast<uint32_t>(n), out->data() + start + kBinaryFramePrefixBytes);
  return n;
}

void BinaryAnswerEncoder::ForgetStrings() {
  base_ += static_cast<uint32_t>(strings_.strings().size());
  strings_.Clear();
}

void BinaryAnswerEncoder::Reset() {
  strings_.Clear();
  base_ = 0;
  text_bytes_ = 0;
}

void EncodeBinaryLookupEnd(std::string* out) { out->append(kBinaryFramePrefixBytes, '\0'); }

uint32_t BinaryFrameLength(const char* prefix) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(prefix[i]);
  return v;
}

}  // namespace jitsym::proto
