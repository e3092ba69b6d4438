// Binary lookup answers, decoding side (the client's hot path). Every count, length and index
// comes from the peer and is checked against what is left before it is used: a malformed
// answer is an error naming the byte offset (from the first byte after the header line),
// never a read past the end or an allocation the input did not pay for.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "daemon/util/byte_reader.h"
#include "proto/binary_answer.h"
#include "proto/protocol.h"

namespace jitsym::proto {
namespace {

using namespace binary;  // NOLINT: the member bits

class FrameDecoder {
 public:
  // `payload` is one frame's payload; `base` its offset in the frames; `table` the strings
  // the answer sent so far, or `connection` the connection's table.
  FrameDecoder(std::string_view payload, size_t base, std::vector<std::string_view>* table,
               ConnectionStrings* connection)
      : r_(payload, ByteOrder::kLittle), base_(base), table_(table), connection_(connection) {}

  const std::string& error() const { return error_; }
  size_t remaining() const { return r_.remaining(); }
  bool at_end() const { return r_.at_end(); }

  bool Fail(std::string what) {
    if (error_.empty()) {
      error_ = "binary answer: offset " + std::to_string(base_ + at_) + ": " + std::move(what);
    }
    return false;
  }

  bool U32(std::string_view what, uint32_t* v) {
    at_ = r_.pos();
    *v = r_.U32();
    return r_.ok() || Fail(std::string(what) + " is cut short");
  }
  bool Uleb(std::string_view what, uint64_t* v) {
    at_ = r_.pos();
    *v = r_.Uleb();
    return r_.ok() || Fail(std::string(what) + " is cut short or longer than 10 bytes");
  }
  bool Uint32(std::string_view what, uint32_t* v) {
    uint64_t w = 0;
    if (!Uleb(what, &w)) return false;
    if (w > UINT32_MAX) return Fail(std::string(what) + " " + std::to_string(w) + " is over 2^32");
    *v = static_cast<uint32_t>(w);
    return true;
  }
  bool Text(std::string_view what, std::string_view* s) {
    uint64_t n = 0;
    if (!Uleb(what, &n)) return false;
    if (n > r_.remaining()) {
      return Fail(std::string(what) + " of " + std::to_string(n) + " bytes, only " +
                  std::to_string(r_.remaining()) + " left in the frame");
    }
    const std::span<const uint8_t> bytes = r_.Bytes(static_cast<size_t>(n));
    *s = std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return true;
  }
  // A new string (k = 0) joins the table; k >= 1 names entry k - 1.
  bool String(std::string_view what, std::string_view* s) {
    uint64_t k = 0;
    if (!Uleb(what, &k)) return false;
    if (k == 0) {
      if (!Text(what, s)) return false;
      if (connection_ != nullptr) {
        *s = connection_->Add(*s);
      } else {
        table_->push_back(*s);
      }
      return true;
    }
    const size_t size = connection_ != nullptr ? connection_->size() : table_->size();
    if (k > size) {
      return Fail(std::string(what) + " refers to string " + std::to_string(k - 1) +
                  " of a table of " + std::to_string(size));
    }
    *s = connection_ != nullptr ? (*connection_)[static_cast<size_t>(k - 1)]
                                : (*table_)[static_cast<size_t>(k - 1)];
    return true;
  }

  bool Result(LookupResult* r) {
    uint64_t m = 0;
    if (!Uleb("result members", &m)) return false;
    if (m & ~uint64_t{kAllMembers}) return Fail("result members " + std::to_string(m) + " unknown");
    bool addr_is_hex = true;
    if (m & kRaw) {
      std::string_view text;
      if (!Text("addr", &text)) return false;
      // As the JSON decoder reads "addr": a hex string is the address, anything else is input
      // the daemon echoed with its error.
      if (std::optional<uint64_t> addr = ParseAddress(text)) {
        r->addr = *addr;
      } else {
        r->raw.assign(text);
        addr_is_hex = false;
      }
    } else if (!Uleb("addr", &r->addr)) {
      return false;
    }
    r->found = (m & kFound) != 0;
    std::string_view s;
    if ((m & kName) && !String("name", &r->name)) return false;
    if ((m & kOffset) && !Uleb("offset", &r->offset)) return false;
    if ((m & kStart) && !Uleb("start", &r->start)) return false;
    if ((m & kSize) && !Uleb("size", &r->size)) return false;
    if (m & kOrigin) {
      if (!String("origin", &s)) return false;
      r->origin = OriginFromName(s).value_or(Origin::kUnknown);
    }
    if ((m & kSource) && !String("source", &r->source)) return false;
    if (m & kLoadedAt) {
      if (!Uleb("loaded_at", &r->loaded_at.emplace())) return false;
    }
    if (m & kIncarnation) {
      if (!Uleb("incarnation", &r->incarnation.emplace())) return false;
    }
    if ((m & kFile) && !String("file", &r->file)) return false;
    if ((m & kLine) && !Uint32("line", &r->line)) return false;
    if ((m & kColumn) && !Uint32("column", &r->column)) return false;
    if ((m & kImage) && !String("image", &r->image)) return false;
    if ((m & kBuildId) && !String("build_id", &r->build_id)) return false;
    if (m & kFrames) {
      uint64_t n = 0;
      if (!Uleb("frames", &n)) return false;
      if (n > r_.remaining() / 4) {  // a frame takes at least 4 bytes
        return Fail(std::to_string(n) + " frames do not fit the " + std::to_string(r_.remaining()) +
                    " bytes left");
      }
      r->frames.resize(static_cast<size_t>(n));
      for (Frame& f : r->frames) {
        if (!String("frame name", &f.name) || !String("frame file", &f.file) ||
            !Uint32("frame line", &f.line) || !Uint32("frame column", &f.column)) {
          return false;
        }
      }
    }
    if ((m & kClone) && !String("clone", &r->clone)) return false;
    if (m & kReason) {
      if (!String("reason", &s)) return false;
      r->reason = ReasonFromName(s).value_or(Reason::kUnknown);
    }
    if (m & kDetail) {
      if (!Text("detail", &s)) return false;
      r->detail.assign(s);
    }
    if (m & kError) {
      if (!Text("error", &s)) return false;
      r->error.assign(s);
    }
    if (!addr_is_hex && r->error.empty()) return Fail("addr is not a hex address");
    return true;
  }

 private:
  ByteReader r_;
  size_t base_;
  size_t at_ = 0;  // where the field being read starts, in the payload
  std::vector<std::string_view>* table_;
  ConnectionStrings* connection_;
  std::string error_;
};

Error Malformed(std::string message) {
  return MakeError(ErrorKind::kMalformed, std::move(message));
}

std::string At(size_t offset) { return "binary answer: offset " + std::to_string(offset) + ": "; }

}  // namespace

std::string_view ConnectionStrings::Add(std::string_view s) {
  if (s.empty()) return table_.emplace_back();
  if (s.size() > room_) {  // a new chunk; the rest of the last one stays unused
    static constexpr size_t kChunkBytes = size_t{256} << 10;
    used_ = 0;
    room_ = std::max(kChunkBytes, s.size());
    chunks_.push_back(std::make_unique_for_overwrite<char[]>(room_));
  }
  char* at = chunks_.back().get() + used_;
  std::memcpy(at, s.data(), s.size());
  used_ += s.size();
  room_ -= s.size();
  return table_.emplace_back(at, s.size());
}

Status DecodeBinaryLookupFrames(std::string_view frames, LookupResponse* response,
                                ConnectionStrings* strings) {
  std::vector<LookupResult>& results = response->results;
  std::vector<std::string_view> table;
  size_t n = 0;  // results decoded so far
  size_t at = 0;
  for (;;) {
    if (frames.size() - at < kBinaryFramePrefixBytes) {
      results.resize(n);
      return Malformed(At(at) + "the answer ends without its end marker");
    }
    const uint32_t length = BinaryFrameLength(frames.data() + at);
    at += kBinaryFramePrefixBytes;
    if (length == 0) break;
    if (length > kMaxBinaryFrameBytes || length > frames.size() - at) {
      results.resize(n);
      return Malformed(At(at - kBinaryFramePrefixBytes) + "a frame of " + std::to_string(length) +
                       " bytes, " + std::to_string(frames.size() - at) + " left (at most " +
                       std::to_string(kMaxBinaryFrameBytes) + ")");
    }
    FrameDecoder d(frames.substr(at, length), at, &table, strings);
    uint32_t count = 0;
    bool ok = d.U32("result count", &count);
    if (ok && count > d.remaining() / 2) {  // a result takes at least 2 bytes
      ok = d.Fail(std::to_string(count) + " results do not fit the frame's " +
                  std::to_string(d.remaining()) + " bytes");
    }
    if (ok && count > kMaxBatch - n) {
      ok = d.Fail("more than " + std::to_string(kMaxBatch) + " results in the answer");
    }
    if (ok && results.size() < n + count) results.resize(n + count);
    for (uint32_t i = 0; ok && i < count; ++i) {
      LookupResult& r = results[n++];
      ResetLookupResult(&r);
      ok = d.Result(&r);
    }
    if (ok && !d.at_end()) {
      ok = d.Fail(std::to_string(d.remaining()) + " bytes after the frame's last result");
    }
    if (!ok) {
      results.resize(n);
      return Malformed(d.error());
    }
    at += length;
  }
  results.resize(n);
  if (at != frames.size()) {
    return Malformed(At(at) + std::to_string(frames.size() - at) +
                     " bytes after the end of the answer");
  }
  return OkStatus();
}

}  // namespace jitsym::proto
