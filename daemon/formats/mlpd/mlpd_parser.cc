// The Mono log profiler parser. Longer than our other files (about 700 lines) for one reason:
// DecodeBuffer is a single switch over every event type and subtype of the format, kept whole so
// that it reads side by side with the event table in mono's log.h (and
// shared/specs/mono-log-profiler-format.txt); splitting the switch would scatter one table.
#include "daemon/formats/mlpd/mlpd_parser.h"

#include <zlib.h>

#include <algorithm>

#include "daemon/util/byte_reader.h"
#include "daemon/util/log.h"

namespace jitsym::mlpd {
namespace {

// Extended info values (high 4 bits of the event byte), per type.
constexpr uint8_t kAllocBt = 0x10;
constexpr uint8_t kGcEvent = 0x10, kGcResize = 0x20, kGcMove = 0x30, kGcHandleCreated = 0x40,
                  kGcHandleDestroyed = 0x50, kGcHandleCreatedBt = 0x60, kGcHandleDestroyedBt = 0x70,
                  kGcFinalizeStart = 0x80, kGcFinalizeEnd = 0x90, kGcFinalizeObjectStart = 0xa0,
                  kGcFinalizeObjectEnd = 0xb0;
constexpr uint8_t kEndLoad = 0x20, kEndUnload = 0x40;
constexpr uint8_t kMethodLeave = 0x10, kMethodEnter = 0x20, kMethodExcLeave = 0x30,
                  kMethodJit = 0x40;
constexpr uint8_t kExceptionClause = 0x10, kExceptionBt = 0x80;
constexpr uint8_t kMonitorBt = 0x80;
constexpr uint8_t kHeapStart = 0x00, kHeapEnd = 0x10, kHeapObject = 0x20, kHeapRoot = 0x30,
                  kHeapRootRegister = 0x40, kHeapRootUnregister = 0x50;
constexpr uint8_t kSampleHit = 0x00, kSampleUsym = 0x10, kSampleUbin = 0x20,
                  kSampleCountersDesc = 0x30, kSampleCounters = 0x40;
constexpr uint8_t kJitHelper = 0x10;
constexpr uint8_t kCoverageAssembly = 0x00, kCoverageMethod = 0x10, kCoverageStatement = 0x20,
                  kCoverageClass = 0x30;
constexpr uint8_t kSyncPoint = 0x00, kAotId = 0x10;
// Metadata types.
constexpr uint8_t kMetaClass = 1, kMetaImage = 2, kMetaAssembly = 3, kMetaDomain = 4,
                  kMetaThread = 5, kMetaContext = 6, kMetaVtable = 7;
// mono-counters.h
constexpr uint64_t kCounterSectionPerfcounters = 1u << 15;
enum CounterType : uint64_t {
  kCounterInt = 0,
  kCounterUint,
  kCounterWord,
  kCounterLong,
  kCounterUlong,
  kCounterDouble,
  kCounterString,
  kCounterTimeInterval,
};

constexpr size_t kGzipChunk = 256 * 1024;
// The format is little-endian.
constexpr ByteOrder kOrder = ByteOrder::kLittle;

}  // namespace

std::string_view CodeBufferTypeName(uint8_t type) {
  switch (type) {
    case kBufferMethod:
      return "method";
    case kBufferMethodTrampoline:
      return "method trampoline";
    case kBufferUnboxTrampoline:
      return "unbox trampoline";
    case kBufferImtTrampoline:
      return "imt trampoline";
    case kBufferGenericsTrampoline:
      return "generics trampoline";
    case kBufferSpecificTrampoline:
      return "specific trampoline";
    case kBufferHelper:
      return "misc helper";
    case kBufferMonitor:
      return "monitor/lock";
    case kBufferDelegateInvoke:
      return "delegate invoke";
    case kBufferExceptionHandling:
      return "exception handling";
    default:
      return "unknown";
  }
}

struct Parser::Gzip {
  z_stream zs{};
  bool ended = false;  // a member ended; more input starts another (concatenated gzip)
  std::vector<uint8_t> out = std::vector<uint8_t>(kGzipChunk);
  std::vector<uint8_t> in;  // compressed bytes fed and not inflated yet, from in_pos
  size_t in_pos = 0;
  bool more_out = false;  // the last inflate filled `out`: zlib may hold more output
  Gzip() { inflateInit2(&zs, 16 + MAX_WBITS); }
  ~Gzip() { inflateEnd(&zs); }
};

Parser::Parser(Limits limits) : limits_(limits) {}
Parser::~Parser() = default;

void Parser::Fail(uint64_t offset, std::string message) {
  state_ = State::kFailed;
  error_offset_ = offset;
  error_ = std::move(message);
  pending_.clear();
  pending_.shrink_to_fit();
}

void Parser::Feed(std::span<const uint8_t> data, Sink& sink) {
  if (state_ == State::kFailed || data.empty()) return;
  if (state_ == State::kMagic) {
    // Decide plain or gzip from the first two bytes (a plain file starts with 01 5A).
    size_t take = std::min<size_t>(2 - magic_.size(), data.size());
    magic_.insert(magic_.end(), data.begin(), data.begin() + take);
    data = data.subspan(take);
    if (magic_.size() < 2) return;
    state_ = State::kHeader;
    if (magic_[0] == 0x1f && magic_[1] == 0x8b) gzip_ = std::make_unique<Gzip>();
    std::vector<uint8_t> first;
    first.swap(magic_);
    Feed(first, sink);
    if (data.empty()) return;
  }
  if (!gzip_) {
    FeedPlain(data, sink);
    return;
  }
  Gzip& g = *gzip_;
  // Appended after what is still waiting: the caller is told to Continue first (backlog()), so
  // this holds at most one Feed's bytes.
  if (g.in_pos > 0) {
    g.in.erase(g.in.begin(), g.in.begin() + static_cast<ptrdiff_t>(g.in_pos));
    g.in_pos = 0;
  }
  g.in.insert(g.in.end(), data.begin(), data.end());
  Inflate(sink);
}

void Parser::Release() {
  gzip_.reset();
  std::vector<uint8_t>().swap(pending_);
  std::vector<uint8_t>().swap(magic_);
}

void Parser::Continue(Sink& sink) {
  if (gzip_ && state_ != State::kFailed) Inflate(sink);
}

bool Parser::backlog() const {
  return gzip_ && state_ != State::kFailed && (gzip_->in_pos < gzip_->in.size() || gzip_->more_out);
}

void Parser::Inflate(Sink& sink) {
  Gzip& g = *gzip_;
  z_stream& zs = g.zs;
  uint64_t produced_now = 0;
  while (state_ != State::kFailed && produced_now < limits_.inflate_step &&
         (g.in_pos < g.in.size() || g.more_out)) {
    if (g.ended) {
      inflateReset(&zs);
      g.ended = false;
    }
    zs.next_in = g.in.data() + g.in_pos;
    zs.avail_in = static_cast<uInt>(g.in.size() - g.in_pos);
    zs.next_out = g.out.data();
    zs.avail_out = static_cast<uInt>(g.out.size());
    const int rc = inflate(&zs, Z_NO_FLUSH);
    g.in_pos = g.in.size() - zs.avail_in;
    const size_t produced = g.out.size() - zs.avail_out;
    // A full output buffer may leave output inside zlib with no input left to drive it.
    g.more_out = zs.avail_out == 0;
    inflated_ += produced;
    produced_now += produced;
    if (produced > 0) FeedPlain(std::span(g.out.data(), produced), sink);
    if (rc == Z_STREAM_END) {
      g.ended = true;  // a member ended; more input starts another (concatenated gzip)
      g.more_out = false;
      continue;
    }
    if (rc == Z_BUF_ERROR) {  // no progress possible without more input
      g.more_out = false;
      break;
    }
    if (rc != Z_OK) {
      Fail(offset_ + pending_.size(),
           log::Cat("gzip: ", zs.msg ? zs.msg : "inflate failed", " (zlib error ", rc, ")"));
      break;
    }
  }
  if (g.in_pos == g.in.size()) {
    g.in.clear();
    g.in_pos = 0;
  }
}

void Parser::FeedPlain(std::span<const uint8_t> data, Sink& sink) {
  if (state_ == State::kFailed) return;
  if (pending_.empty()) {
    const size_t used = ParseUnits(data, sink);
    if (state_ != State::kFailed) pending_.assign(data.begin() + used, data.end());
    return;
  }
  pending_.insert(pending_.end(), data.begin(), data.end());
  if (pending_.size() < need_) return;
  const size_t used = ParseUnits(pending_, sink);
  if (state_ == State::kFailed) return;
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(used));
}

size_t Parser::ParseUnits(std::span<const uint8_t> in, Sink& sink) {
  size_t pos = 0;
  need_ = 0;
  while (state_ != State::kFailed) {
    std::span<const uint8_t> rest = in.subspan(pos);
    if (state_ == State::kHeader) {
      const size_t n = ParseHeader(rest, sink);
      if (n == 0) return pos;
      pos += n;
      offset_ += n;
      continue;
    }
    if (rest.size() < kBufferHeaderSize) {
      need_ = kBufferHeaderSize;
      return pos;
    }
    ByteReader r(rest, kOrder);
    const uint32_t id = r.U32();
    const uint32_t len = r.U32();
    if (id != kBufferId) {
      Fail(offset_, log::Cat("bad buffer id 0x", std::hex, id, " (expected 0x", kBufferId, ")"));
      return pos;
    }
    if (len > limits_.max_buffer) {
      Fail(offset_, log::Cat("buffer length ", len, " exceeds limit ", limits_.max_buffer));
      return pos;
    }
    const size_t total = kBufferHeaderSize + static_cast<size_t>(len);
    if (rest.size() < total) {
      need_ = total;
      return pos;
    }
    DecodeBuffer(rest.first(kBufferHeaderSize), rest.subspan(kBufferHeaderSize, len), offset_,
                 sink);
    ++buffers_;
    pos += total;
    offset_ += total;
  }
  return pos;
}

size_t Parser::ParseHeader(std::span<const uint8_t> in, Sink& sink) {
  if (in.size() >= 4) {
    const uint32_t id = ByteReader(in, kOrder).U32();
    if (id != kHeaderId) {
      Fail(0, log::Cat("bad header id 0x", std::hex, id, " (not a Mono log profiler file)"));
      return 0;
    }
  }
  if (in.size() < 8) {
    need_ = 8;
    return 0;
  }
  const uint8_t major = in[4];
  const size_t fixed = 16 + (major >= 3 ? 8 : 0) + 14;
  if (in.size() < fixed) {
    need_ = fixed;
    return 0;
  }
  Header h;
  ByteReader r(in, kOrder);
  r.U32();
  h.major = r.Read<uint8_t>();
  h.minor = r.Read<uint8_t>();
  h.data_version = r.Read<uint8_t>();
  h.ptr_size = r.Read<uint8_t>();
  if (h.data_version > kMaxDataVersion || h.data_version < kMinDataVersion) {
    Fail(6, log::Cat("data version ", int{h.data_version}, " not supported (reads ",
                     int{kMinDataVersion}, " to ", int{kMaxDataVersion}, ")"));
    return 0;
  }
  if (h.major < 1) {
    Fail(4, log::Cat("profiler version ", int{h.major}, ".", int{h.minor}, " not supported"));
    return 0;
  }
  if (h.ptr_size != 4 && h.ptr_size != 8) {
    Fail(7, log::Cat("pointer size ", int{h.ptr_size}, " not supported"));
    return 0;
  }
  h.startup_ms = r.U64();
  if (h.major >= 3) h.startup_ns = r.U64();
  h.timer_overhead = r.U32();
  h.flags = r.U32();
  h.pid = r.U32();
  h.port = r.Read<uint16_t>();
  size_t pos = fixed;
  std::string* strings[] = {&h.args, &h.arch, &h.os};
  for (std::string* s : strings) {
    ByteReader sr(in.subspan(pos), kOrder);
    const uint32_t len = sr.U32();
    if (!sr.ok()) {
      need_ = pos + 4;
      return 0;
    }
    if (len > limits_.max_header_string) {
      Fail(pos, log::Cat("header string of ", len, " bytes exceeds limit"));
      return 0;
    }
    const std::span<const uint8_t> b = sr.Bytes(len);
    if (!sr.ok()) {
      need_ = pos + 4 + len;
      return 0;
    }
    // The field is NUL-padded: the string ends at the first NUL.
    std::string_view text(reinterpret_cast<const char*>(b.data()), b.size());
    s->assign(text.substr(0, text.find('\0')));
    pos += 4 + len;
  }
  header_ = std::move(h);
  state_ = State::kBuffers;
  sink.OnHeader(header_);
  return pos;
}

void Parser::DecodeBuffer(std::span<const uint8_t> head, std::span<const uint8_t> events,
                          uint64_t buffer_offset, Sink& sink) {
  ByteReader hr(head, kOrder);
  hr.Skip(8);
  uint64_t time = hr.U64();
  const uint64_t ptr_base = hr.U64();
  hr.U64();  // obj_base
  const uint64_t thread_id = hr.U64();
  uint64_t method = hr.U64();
  const int v = header_.data_version;
  const uint64_t ptr_mask = header_.ptr_size == 4 ? 0xffffffffull : ~uint64_t{0};
  auto ptr = [&](int64_t diff) { return (ptr_base + static_cast<uint64_t>(diff)) & ptr_mask; };

  ByteReader r(events, kOrder);
  const uint8_t* base = events.data();
  const char* why = nullptr;
  const uint8_t* event_start = base;
  auto backtrace = [&] {
    const uint64_t n = r.Uleb();
    for (uint64_t i = 0; i < n && r.ok(); ++i) method += static_cast<uint64_t>(r.Sleb());
  };

  while (!r.at_end()) {
    event_start = r.cursor();
    const uint8_t event = r.U8();
    const uint8_t type = event & 0x0f;
    const uint8_t ext = event & 0xf0;
    time += r.Uleb();  // wraps for TYPE_JIT stamped before the previous event
    const uint64_t at = buffer_offset + kBufferHeaderSize + (event_start - base);
    switch (type) {
      case kTypeAlloc:
        if (ext != 0 && ext != kAllocBt) {
          why = "unknown TYPE_ALLOC info";
          break;
        }
        r.Sleb();
        r.Sleb();
        r.Uleb();
        if (ext == kAllocBt) backtrace();
        break;
      case kTypeGc:
        switch (ext) {
          case kGcEvent:
            r.U8();
            r.U8();
            break;
          case kGcResize:
            r.Uleb();
            break;
          case kGcMove: {
            const uint64_t n = r.Uleb();
            for (uint64_t i = 0; i < n && r.ok(); ++i) r.Sleb();
            break;
          }
          case kGcHandleCreated:
          case kGcHandleCreatedBt:
            r.Uleb();
            r.Uleb();
            r.Sleb();
            if (ext == kGcHandleCreatedBt) backtrace();
            break;
          case kGcHandleDestroyed:
          case kGcHandleDestroyedBt:
            r.Uleb();
            r.Uleb();
            if (ext == kGcHandleDestroyedBt) backtrace();
            break;
          case kGcFinalizeStart:
          case kGcFinalizeEnd:
            break;
          case kGcFinalizeObjectStart:
          case kGcFinalizeObjectEnd:
            r.Sleb();
            break;
          default:
            why = "unknown TYPE_GC info";
        }
        break;
      case kTypeMetadata: {
        if (ext != 0 && ext != kEndLoad && ext != kEndUnload) {
          why = "unknown TYPE_METADATA info";
          break;
        }
        const uint8_t mtype = r.U8();
        const uint64_t pointer = ptr(r.Sleb());
        switch (mtype) {
          case kMetaClass:
            r.Sleb();
            r.CString();
            break;
          case kMetaImage: {
            ImageLoad image;
            image.offset = at;
            image.time = time;
            image.image = pointer;
            image.unload = ext == kEndUnload;
            image.name = r.CString();
            // mprof-report reads an mvid after loads only.
            if (v >= 16 && ext == kEndLoad) image.mvid = r.CString();
            if (r.ok()) sink.OnImage(image);
            break;
          }
          case kMetaAssembly:
            if (v > 13) r.Sleb();  // image
            r.CString();
            break;
          case kMetaDomain:
          case kMetaThread:
            if (ext == 0) r.CString();  // a name event
            break;
          case kMetaContext:
            r.Sleb();
            break;
          case kMetaVtable:
            r.Sleb();
            r.Sleb();
            break;
          default:
            why = "unknown metadata type";
        }
        break;
      }
      case kTypeMethod: {
        if (ext != kMethodLeave && ext != kMethodEnter && ext != kMethodExcLeave &&
            ext != kMethodJit) {
          why = "unknown TYPE_METHOD info";
          break;
        }
        method += static_cast<uint64_t>(r.Sleb());
        if (ext == kMethodJit) {
          Code c;
          c.kind = Code::Kind::kJit;
          c.offset = at;
          c.time = time;
          c.thread_id = thread_id;
          c.method = method;
          c.address = ptr(r.Sleb());
          c.size = r.Uleb();
          c.name = r.CString();
          if (r.ok()) sink.OnCode(c);
        }
        break;
      }
      case kTypeException: {
        const uint8_t sub = event & 0x70;
        if (sub == kExceptionClause) {
          r.U8();
          r.Uleb();
          method += static_cast<uint64_t>(r.Sleb());
          if (v > 13) r.Sleb();  // exception object
        } else if (sub == 0) {
          r.Sleb();
          if (event & kExceptionBt) backtrace();
        } else {
          why = "unknown TYPE_EXCEPTION info";
        }
        break;
      }
      case kTypeMonitor:
        // Data version 13 keeps the monitor event in the info bits; later ones in a byte.
        if (v > 13) {
          if (ext & 0x70) {
            why = "unknown TYPE_MONITOR info";
            break;
          }
          r.U8();
        }
        r.Sleb();
        if (event & kMonitorBt) backtrace();
        break;
      case kTypeHeap:
        switch (ext) {
          case kHeapStart:
          case kHeapEnd:
            break;
          case kHeapObject: {
            r.Sleb();
            r.Sleb();
            r.Uleb();
            if (v >= 16) r.U8();  // generation
            const uint64_t n = r.Uleb();
            for (uint64_t i = 0; i < n && r.ok(); ++i) {
              r.Uleb();
              r.Sleb();
            }
            break;
          }
          case kHeapRoot: {
            const uint64_t n = r.Uleb();
            if (v > 14) {
              for (uint64_t i = 0; i < n && r.ok(); ++i) {
                r.Sleb();
                r.Sleb();
              }
            } else {
              r.Uleb();  // gc number
              for (uint64_t i = 0; i < n && r.ok(); ++i) {
                r.Sleb();
                if (v == 13)
                  r.U8();
                else
                  r.Uleb();  // root type
                r.Uleb();    // extra info
              }
            }
            break;
          }
          case kHeapRootRegister:
            if (v < 15) {
              why = "TYPE_HEAP_ROOT_REGISTER before data version 15";
              break;
            }
            r.Sleb();
            r.Uleb();
            r.U8();
            r.Sleb();
            r.CString();
            break;
          case kHeapRootUnregister:
            if (v < 15) {
              why = "TYPE_HEAP_ROOT_UNREGISTER before data version 15";
              break;
            }
            r.Sleb();
            break;
          default:
            why = "unknown TYPE_HEAP info";
        }
        break;
      case kTypeSample:
        switch (ext) {
          case kSampleHit: {
            if (v < 14) r.U8();  // sample type
            r.Sleb();            // thread
            const uint64_t n = r.Uleb();
            for (uint64_t i = 0; i < n && r.ok(); ++i) r.Sleb();
            backtrace();  // managed frames
            break;
          }
          case kSampleUsym: {
            Code c;
            c.kind = Code::Kind::kNativeSymbol;
            c.offset = at;
            c.time = time;
            c.thread_id = thread_id;
            c.address = ptr(r.Sleb());
            c.size = r.Uleb();
            c.name = r.CString();
            if (r.ok()) sink.OnCode(c);
            break;
          }
          case kSampleUbin:
            if (v >= 16) {
              why = "TYPE_SAMPLE_UBIN after data version 15";
              break;
            }
            r.Sleb();
            r.Uleb();
            r.Uleb();
            r.CString();
            break;
          case kSampleCountersDesc: {
            const uint64_t n = r.Uleb();
            for (uint64_t i = 0; i < n && r.ok(); ++i) {
              if (r.Uleb() == kCounterSectionPerfcounters) r.CString();
              r.CString();
              if (v < 15) {
                r.Skip(3);  // type, unit, variance as bytes
              } else {
                r.Uleb();
                r.Uleb();
                r.Uleb();
              }
              r.Uleb();  // index
            }
            break;
          }
          case kSampleCounters:
            while (r.ok() && !why) {
              if (r.Uleb() == 0) break;  // index 0 ends the list
              const uint64_t ctype = v < 15 ? r.U8() : r.Uleb();
              switch (ctype) {
                case kCounterInt:
                case kCounterWord:
                case kCounterLong:
                case kCounterTimeInterval:
                  r.Sleb();
                  break;
                case kCounterUint:
                case kCounterUlong:
                  r.Uleb();
                  break;
                case kCounterDouble:
                  r.Skip(8);
                  break;
                case kCounterString:
                  if (r.U8() != 0) r.CString();
                  break;
                default:
                  why = "unknown counter type";
              }
            }
            break;
          default:
            why = "unknown TYPE_SAMPLE info";
        }
        break;
      case kTypeRuntime: {
        if (ext != kJitHelper) {
          why = "unknown TYPE_RUNTIME info";
          break;
        }
        uint8_t btype = r.U8();
        if (v < 14) --btype;  // versions before 14 counted from an UNKNOWN = 0
        Code c;
        c.kind = Code::Kind::kHelper;
        c.offset = at;
        c.time = time;
        c.thread_id = thread_id;
        c.helper_type = btype;
        c.address = ptr(r.Sleb());
        c.size = r.Uleb();
        c.name = btype == kBufferSpecificTrampoline ? r.CString() : CodeBufferTypeName(btype);
        if (r.ok()) sink.OnCode(c);
        break;
      }
      case kTypeCoverage: {
        if (v >= 16) {
          why = "TYPE_COVERAGE after data version 15";
          break;
        }
        int strings = 0, values = 0;
        switch (ext) {
          case kCoverageMethod:
            strings = 5;
            values = 3;
            break;
          case kCoverageStatement:
            values = 5;
            break;
          case kCoverageAssembly:
            strings = 3;
            values = 3;
            break;
          case kCoverageClass:
            strings = 2;
            values = 3;
            break;
          default:
            why = "unknown TYPE_COVERAGE info";
        }
        for (int i = 0; i < strings; ++i) r.CString();
        for (int i = 0; i < values; ++i) r.Uleb();
        break;
      }
      case kTypeMeta:
        if (ext == kSyncPoint) {
          r.U8();
        } else if (ext == kAotId) {
          r.CString();
        } else {
          why = "unknown TYPE_META info";
        }
        break;
      default:
        why = "unknown event type";
    }
    if (!why && !r.ok()) why = "event runs past the end of its buffer";
    if (why) {
      ++bad_buffers_;
      const uint64_t at2 = buffer_offset + kBufferHeaderSize + (event_start - base);
      sink.OnBadEvent(
          buffer_offset, at2,
          log::Cat(why, " (event byte 0x", std::hex, int{event}, std::dec, ", ",
                   events.size() - (event_start - base), " bytes of the buffer ignored)"));
      return;
    }
    ++events_;
  }
}

}  // namespace jitsym::mlpd
