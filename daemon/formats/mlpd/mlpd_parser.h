// Incremental parser for Mono log profiler files (*.mlpd), as written by
// `mono --profile=log:output=FILE` (mono/profiler/log.h and log.c; copy of the format comment in
// shared/specs/mono-log-profiler-format.txt). Plain and gzip-compressed files are both read.
//
//   file   := header buffer*
//   header := id:u32(0x4D505A01) major:u8 minor:u8 data_version:u8 ptr_size:u8 startup_ms:u64
//             [startup_ns:u64 when major >= 3] timer_overhead:u32 flags:u32 pid:u32 port:u16
//             (len:u32 bytes[len])x3 (args, arch, os; len counts the trailing NUL)
//   buffer := id:u32(0x4D504C01) len:u32 time_base ptr_base obj_base thread_id method_base:u64
//             event*  (exactly len bytes)
//   event  := (extended info << 4 | type):u8 time_delta:uleb128 fields...
//
// All integers little-endian. Events carry no length, so every event type is decoded fully to
// find the next one; at an unexpected value the rest of that buffer is ignored (the format says
// so) and reported once through Sink::OnBadEvent; the next buffer is read normally. Pointers are
// sleb128 differences from the buffer's ptr_base; method ids are sleb128 differences from the
// previous method id of the buffer (starting at method_base); times are uleb128 differences from
// the previous time (starting at time_base, wrapping: mono's writer thread stamps TYPE_JIT with
// the time the method was compiled, which may precede the buffer's previous event).
//
// Incremental: fed the file's bytes in order, in chunks of any size. The header and each buffer
// are parsed only once complete, so a buffer still being written is never misparsed. A gzip file
// (magic 1F 8B) is inflated as it arrives; offsets are then in the uncompressed stream.
// Inflation runs on a budget: one Feed or Continue inflates at most Limits::inflate_step bytes
// and keeps the compressed bytes it has not reached (at most what one Feed gave it), so a small
// file that inflates to gigabytes (a gzip bomb) is parsed in bounded steps between which the
// caller can do other work, and can count (and refuse) what the file inflates to.
//
// Data versions 13 to 17 are read (the per-version differences are noted in mlpd_parser.cc);
// others are refused. A bad header or buffer id, or a buffer longer than Limits::max_buffer,
// stops the file.
#ifndef JITSYM_DAEMON_FORMATS_MLPD_MLPD_PARSER_H_
#define JITSYM_DAEMON_FORMATS_MLPD_MLPD_PARSER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::mlpd {

inline constexpr uint32_t kHeaderId = 0x4D505A01;
inline constexpr uint32_t kBufferId = 0x4D504C01;
inline constexpr uint32_t kBufferHeaderSize = 48;
inline constexpr uint8_t kMinDataVersion = 13;
inline constexpr uint8_t kMaxDataVersion = 17;

// Event types (low 4 bits of the event byte).
enum EventType : uint8_t {
  kTypeAlloc = 0,
  kTypeGc = 1,
  kTypeMetadata = 2,
  kTypeMethod = 3,
  kTypeException = 4,
  kTypeMonitor = 5,
  kTypeHeap = 6,
  kTypeSample = 7,
  kTypeRuntime = 8,
  kTypeCoverage = 9,  // data versions < 16
  kTypeMeta = 10,
};

// MonoProfilerCodeBufferType as numbered from data version 14 on (older files are renumbered).
enum CodeBufferType : uint8_t {
  kBufferMethod = 0,
  kBufferMethodTrampoline = 1,
  kBufferUnboxTrampoline = 2,
  kBufferImtTrampoline = 3,
  kBufferGenericsTrampoline = 4,
  kBufferSpecificTrampoline = 5,
  kBufferHelper = 6,
  kBufferMonitor = 7,
  kBufferDelegateInvoke = 8,
  kBufferExceptionHandling = 9,
};
// "specific trampoline", "misc helper", ... as mprof-report names them; "unknown" otherwise.
std::string_view CodeBufferTypeName(uint8_t type);

struct Header {
  uint8_t major = 0;
  uint8_t minor = 0;
  uint8_t data_version = 0;
  uint8_t ptr_size = 0;
  uint64_t startup_ms = 0;             // wall clock, milliseconds since the epoch
  std::optional<uint64_t> startup_ns;  // profiler clock (major >= 3)
  uint32_t timer_overhead = 0;
  uint32_t flags = 0;
  uint32_t pid = 0;
  uint16_t port = 0;
  std::string args;
  std::string arch;
  std::string os;
};

struct Code {
  enum class Kind { kJit, kHelper, kNativeSymbol };
  Kind kind = Kind::kJit;
  uint64_t offset = 0;  // of the event (in the uncompressed stream)
  uint64_t time = 0;    // profiler clock, ns
  uint64_t thread_id = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t method = 0;      // kJit: the MonoMethod*
  uint8_t helper_type = 0;  // kHelper: CodeBufferType
  std::string_view name;    // kHelper without a name: CodeBufferTypeName(helper_type)
};

struct ImageLoad {
  uint64_t offset = 0;
  uint64_t time = 0;
  uint64_t image = 0;  // MonoImage*
  bool unload = false;
  std::string_view name;
  std::string_view mvid;  // data version >= 16, loads only
};

// Receives events in file order. References are valid only during the call.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void OnHeader(const Header& header) {}
  virtual void OnCode(const Code& code) {}
  virtual void OnImage(const ImageLoad& image) {}
  // A buffer whose events could not all be decoded: the rest of it, from `offset`, is ignored.
  virtual void OnBadEvent(uint64_t buffer_offset, uint64_t offset, const std::string& why) {}
};

struct Limits {
  uint32_t max_buffer = 64u << 20;        // a buffer's event bytes (mono writes 64 KiB)
  uint32_t max_header_string = 1u << 20;  // args, arch, os
  uint32_t inflate_step = 4u << 20;       // bytes one Feed or Continue inflates at most
};

class Parser {
 public:
  enum class State { kMagic, kHeader, kBuffers, kFailed };

  explicit Parser(Limits limits = {});
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  // Feeds the next bytes of the file. Stops at the first fatal error (failed()). A compressed
  // file's bytes are inflated up to Limits::inflate_step; the rest waits for Continue.
  void Feed(std::span<const uint8_t> data, Sink& sink);
  // Inflates (and parses) up to another Limits::inflate_step bytes of what was fed.
  void Continue(Sink& sink);
  // Fed bytes not inflated yet: call Continue (before feeding more, to keep memory bounded).
  bool backlog() const;
  // The file will not be fed again: frees the inflate state and buffers (a finished file stays
  // in the index; these would stay with it).
  void Release();
  // Bytes inflation has produced so far (0 for a plain file).
  uint64_t inflated() const { return inflated_; }

  State state() const { return state_; }
  bool failed() const { return state_ == State::kFailed; }
  uint64_t error_offset() const { return error_offset_; }
  const std::string& error() const { return error_; }

  bool compressed() const { return gzip_ != nullptr; }
  const Header& header() const { return header_; }
  bool has_header() const { return state_ == State::kBuffers; }
  // Uncompressed bytes consumed (header and complete buffers).
  uint64_t offset() const { return offset_; }
  size_t buffered() const { return pending_.size(); }
  uint64_t buffers() const { return buffers_; }
  uint64_t events() const { return events_; }
  uint64_t bad_buffers() const { return bad_buffers_; }

 private:
  struct Gzip;
  void FeedPlain(std::span<const uint8_t> data, Sink& sink);
  void Inflate(Sink& sink);
  // Parses complete units from the front of `in`; returns the bytes consumed.
  size_t ParseUnits(std::span<const uint8_t> in, Sink& sink);
  // 0 and need_ set when incomplete; 0 and failed on error.
  size_t ParseHeader(std::span<const uint8_t> in, Sink& sink);
  void DecodeBuffer(std::span<const uint8_t> header, std::span<const uint8_t> events,
                    uint64_t offset, Sink& sink);
  void Fail(uint64_t offset, std::string message);

  Limits limits_;
  State state_ = State::kMagic;
  std::unique_ptr<Gzip> gzip_;
  std::vector<uint8_t> magic_;    // the first bytes, until gzip or not is decided
  std::vector<uint8_t> pending_;  // an incomplete unit
  size_t need_ = 0;               // pending_ must reach this before parsing again
  Header header_;
  uint64_t offset_ = 0;
  uint64_t buffers_ = 0;
  uint64_t events_ = 0;
  uint64_t bad_buffers_ = 0;
  uint64_t inflated_ = 0;
  uint64_t error_offset_ = 0;
  std::string error_;
};

}  // namespace jitsym::mlpd

#endif  // JITSYM_DAEMON_FORMATS_MLPD_MLPD_PARSER_H_
