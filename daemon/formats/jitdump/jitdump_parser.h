// Incremental parser for perf jitdump files (tools/perf/Documentation/jitdump-specification.txt;
// copy in shared/specs/jitdump-specification.txt).
//
//   file   := header record*
//   header := magic:u32 version:u32 total_size:u32 elf_mach:u32 pad1:u32 pid:u32
//             timestamp:u64 flags:u64 [extra bytes up to total_size]
//   record := id:u32 total_size:u32 timestamp:u64 payload[total_size - 16]
//   LOAD(0)   := pid tid:u32 vma code_addr code_size code_index:u64 name\0 [pad] code[code_size]
//   MOVE(1)   := pid tid:u32 vma old_code_addr new_code_addr code_size code_index:u64
//   DEBUG(2)  := code_addr nr_entry:u64 (addr:u64 line:u32 discrim:u32 file\0)*
//   CLOSE(3)  := (nothing)
//   UNWIND(4) := unwind_data_size eh_frame_hdr_size mapped_size:u64 data[...]
//
// Byte order is decided once from the magic (0x4A695444 native, 0x4454694A swapped); records go
// to the sink in host order. The parser is pure (bytes in, records out) and incremental: it is
// fed the file's bytes in order, in chunks of any size, and emits a record only once the part it
// needs is complete, so a record that is still being written is never misparsed. Code bytes and
// unwinding data are never buffered: skippable() tells the loader how many bytes it may seek over.
//
// Producer quirks handled here or documented for the caller:
// - old Mono writers put 8 in the header's total_size: values below 40 are clamped to 40;
// - the perf JVMTI agent pads between a LOAD's name and its code: the name is the bytes up to the
//   first NUL in the region between the fixed fields and the code;
// - V8 (pad1 == 0xDEADBEEF) stores debug entry addresses as code_addr + 0x40 + pc offset (it
//   compensates for the ELF header perf inject used to put before the code); see
//   Header::debug_addr_bias().
#ifndef JITSYM_DAEMON_FORMATS_JITDUMP_JITDUMP_PARSER_H_
#define JITSYM_DAEMON_FORMATS_JITDUMP_JITDUMP_PARSER_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/util/byte_reader.h"

namespace jitsym::jitdump {

inline constexpr uint32_t kMagic = 0x4A695444;         // "JiTD" written in host order
inline constexpr uint32_t kMagicSwapped = 0x4454694A;  // written by a host of the other order
inline constexpr uint32_t kHeaderSize = 40;
inline constexpr uint32_t kMaxHeaderSize = 4096;
inline constexpr uint32_t kRecordHeaderSize = 16;
inline constexpr uint32_t kLoadFixedSize = kRecordHeaderSize + 40;
inline constexpr uint32_t kMoveSize = kRecordHeaderSize + 48;
inline constexpr uint32_t kDebugFixedSize = kRecordHeaderSize + 16;
inline constexpr uint32_t kDebugEntryMinSize = 17;  // addr, line, discrim, empty name
inline constexpr uint32_t kUnwindFixedSize = kRecordHeaderSize + 24;
inline constexpr uint64_t kFlagArchTimestamp = 1;
inline constexpr uint32_t kV8Pad1 = 0xDEADBEEF;
inline constexpr uint64_t kV8DebugAddrBias = 0x40;

enum RecordId : uint32_t {
  kCodeLoad = 0,
  kCodeMove = 1,
  kCodeDebugInfo = 2,
  kCodeClose = 3,
  kCodeUnwindingInfo = 4,
};

struct Header {
  uint32_t version = 0;
  uint32_t total_size = 0;  // as written (may be < 40 for old Mono)
  uint32_t elf_mach = 0;
  uint32_t pad1 = 0;
  uint32_t pid = 0;
  uint64_t timestamp = 0;
  uint64_t flags = 0;
  bool swapped = false;  // file byte order differs from the host's

  bool arch_timestamp() const { return (flags & kFlagArchTimestamp) != 0; }
  // What to subtract from debug entry addresses to get code addresses.
  uint64_t debug_addr_bias() const { return pad1 == kV8Pad1 ? kV8DebugAddrBias : 0; }
};

struct DebugEntry {
  uint64_t addr = 0;
  uint32_t line = 0;
  uint32_t discrim = 0;  // V8 and others put the column here
  std::string_view file;
};

struct CodeLoad {
  uint64_t offset = 0;  // file offset of the record
  uint64_t timestamp = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t vma = 0;
  uint64_t code_addr = 0;
  uint64_t code_size = 0;
  uint64_t code_index = 0;
  std::string_view name;
  // The DEBUG_INFO record that preceded this LOAD for the same code_addr, if any.
  std::span<const DebugEntry> debug;
};

struct CodeMove {
  uint64_t offset = 0;
  uint64_t timestamp = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t vma = 0;
  uint64_t old_code_addr = 0;
  uint64_t new_code_addr = 0;
  uint64_t code_size = 0;
  uint64_t code_index = 0;
};

struct UnwindingInfo {
  uint64_t offset = 0;
  uint64_t timestamp = 0;
  uint64_t unwind_data_size = 0;
  uint64_t eh_frame_hdr_size = 0;
  uint64_t mapped_size = 0;
};

// Receives records in file order. References are valid only during the call.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void OnHeader(const Header& header) {}
  virtual void OnCodeLoad(const CodeLoad& load) {}
  virtual void OnCodeMove(const CodeMove& move) {}
  virtual void OnClose(uint64_t offset, uint64_t timestamp) {}
  virtual void OnUnwindingInfo(const UnwindingInfo& info) {}
  virtual void OnUnknownRecord(uint64_t offset, uint32_t id, uint32_t size) {}
  // A DEBUG_INFO record that no LOAD claimed (the next LOAD had another code_addr).
  virtual void OnOrphanDebugInfo(uint64_t offset, uint64_t code_addr) {}
};

struct Limits {
  // Largest record accepted at all (a LOAD carries its code; 64 MiB is far beyond any function).
  uint32_t max_record_size = 64u << 20;
  // Largest part of a record that is buffered: header + name of a LOAD, a whole DEBUG_INFO.
  uint32_t max_buffered = 16u << 20;
};

class Parser {
 public:
  enum class State { kHeader, kRecords, kFailed };

  explicit Parser(Limits limits = {}) : limits_(limits) {}

  // Feeds the next bytes of the file. Stops at the first corrupt record (state() == kFailed);
  // what came before it has been delivered.
  void Feed(std::span<const uint8_t> data, Sink& sink);

  // Bytes the parser would discard unread (a LOAD's code, unwinding data, unknown payloads).
  // A loader may seek over them and call Skip() instead of reading them.
  uint64_t skippable() const { return skip_; }
  void Skip(uint64_t n);

  State state() const { return state_; }
  bool failed() const { return state_ == State::kFailed; }
  // The corrupt record's file offset and what was wrong with it.
  uint64_t error_offset() const { return error_offset_; }
  const std::string& error() const { return error_; }

  // Bytes of the file consumed so far (records parsed or skipped; excludes buffered bytes).
  uint64_t offset() const { return offset_; }
  // Bytes held for a record not yet complete.
  size_t buffered() const { return buf_.size(); }
  uint64_t records() const { return records_; }
  bool closed() const { return closed_; }
  const Header& header() const { return header_; }

 private:
  struct Outcome {
    size_t consumed = 0;  // > 0: a unit was parsed from the front of the input
    size_t need = 0;      // consumed == 0 and not failed: bytes required from the front
  };
  Outcome Step(std::span<const uint8_t> in, Sink& sink);
  Outcome StepHeader(std::span<const uint8_t> in, Sink& sink);
  Outcome StepRecord(std::span<const uint8_t> in, Sink& sink);
  Outcome Fail(uint64_t offset, std::string message);

  Limits limits_;
  State state_ = State::kHeader;
  ByteOrder order_ = kHostByteOrder;  // decided from the magic
  Header header_;
  uint64_t offset_ = 0;
  uint64_t skip_ = 0;
  uint64_t records_ = 0;
  bool closed_ = false;
  std::vector<uint8_t> buf_;  // a partial unit; non-empty only while waiting for bytes
  size_t need_ = 0;           // bytes buf_ must reach before the next Step
  // The last DEBUG_INFO record, raw, waiting for its LOAD; entries point into it.
  std::vector<uint8_t> debug_raw_;
  std::vector<DebugEntry> debug_entries_;
  uint64_t debug_code_addr_ = 0;
  uint64_t debug_offset_ = 0;
  bool debug_pending_ = false;
  uint64_t error_offset_ = 0;
  std::string error_;
};

}  // namespace jitsym::jitdump

#endif  // JITSYM_DAEMON_FORMATS_JITDUMP_JITDUMP_PARSER_H_
