// Incremental parser for perf maps (`/tmp/perf-<pid>.map`), the text format perf reads for JIT
// code (tools/perf/Documentation/jit-interface.txt):
//
//   file  := line*
//   line  := [ws] START ws SIZE ws NAME ["\r"] "\n"
//   START := ["0x" | "0X"] hexdigit+      (any case; at most 64 bits of value)
//   SIZE  := ["0x" | "0X"] hexdigit+
//   ws    := (" " | "\t")+
//   NAME  := any bytes but "\n", at least one (spaces kept; a final "\r" is dropped)
//
// Producers: V8 `--perf-basic-prof` and .NET/Mono write bare hex (`7f3a1c0040 1a0 LazyCompile:*f
// a.js:1`), the JVM's `jcmd <pid> Compiler.perfmap` writes `0x`-prefixed 16-digit fields.
//
// The parser is pure (bytes in, entries out) and incremental: it is fed the file's bytes in order,
// in chunks of any size, and emits a line only once its "\n" has arrived, since a writer may be
// in the middle of a line. A malformed line is reported and skipped; parsing goes on with the
// next line. Settle() is told when the file has stopped growing (for a while, or for good): the
// line still waiting for its "\n" is then emitted as it stands, marked provisional; when later
// bytes complete it, the completed line is emitted only if it says something else (marked as
// replacing the provisional one), or the provisional one is withdrawn if the completed line is
// malformed. A line is thus never emitted twice with the same meaning. A line longer than kMaxLine
// is never buffered whole: its bytes are dropped up to the next "\n" and it is reported as too
// long. Blank lines (only spaces, tabs, "\r") are ignored.
#ifndef JITSYM_DAEMON_FORMATS_PERFMAP_PERFMAP_PARSER_H_
#define JITSYM_DAEMON_FORMATS_PERFMAP_PERFMAP_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace jitsym::perfmap {

// Longest line accepted, without its "\n" (names of real producers stay far below).
inline constexpr size_t kMaxLine = 64 * 1024;

struct Entry {
  uint64_t offset = 0;  // file offset of the line's first byte
  uint64_t start = 0;
  uint64_t size = 0;  // 0: defines nothing (the caller decides)
  std::string_view name;
  // The line has no "\n" yet (Parser::Settle): later bytes may complete it.
  bool provisional = false;
  // A provisional entry at this offset was emitted before; this one takes its place.
  bool replaces = false;
};

enum class LineError {
  kBadStart,     // START missing or not hex
  kBadSize,      // SIZE missing or not hex
  kMissingName,  // nothing after SIZE
  kOverflow,     // a field with more than 64 bits of value
  kWraps,        // START + SIZE beyond the address space
  kTooLong,      // longer than kMaxLine
};
std::string_view LineErrorName(LineError error);

// Receives lines in file order. References are valid only during the call.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void OnEntry(const Entry& entry) = 0;
  virtual void OnMalformed(uint64_t offset, LineError error) {}
  // The provisional entry emitted for a line no longer stands: the completed line is malformed
  // (or blank). `provisional` is the entry as it was emitted.
  virtual void OnWithdrawn(const Entry& provisional) {}
};

// Parses one line (without its "\n"; a final "\r" is allowed). nullopt and `error` set: a
// malformed line; nullopt and `error` left alone: a blank line.
std::optional<Entry> ParseLine(std::string_view line, std::optional<LineError>* error);

class Parser {
 public:
  // Feeds the next bytes of the file.
  void Feed(std::span<const uint8_t> data, Sink& sink);
  // The file has stopped growing: emits the line waiting for its "\n", if it parses, as a
  // provisional entry (once per content: calling again without new bytes emits nothing). A
  // malformed unfinished line is neither emitted nor counted.
  void Settle(Sink& sink);

  // Bytes of the file consumed so far (complete lines and dropped bytes; excludes the pending
  // partial line).
  uint64_t offset() const { return offset_; }
  // Bytes held for a line whose "\n" has not arrived (at most kMaxLine).
  size_t buffered() const { return buf_.size(); }
  uint64_t entries() const { return entries_; }
  uint64_t malformed() const { return malformed_; }

 private:
  void Line(std::string_view line, uint64_t offset, Sink& sink);
  // Line, for the line a provisional entry was emitted for: replaces or withdraws it.
  void CompleteProvisional(std::string_view line, uint64_t offset, Sink& sink);
  // Withdraws the provisional entry, if one was emitted for the line at `offset`.
  void Withdraw(uint64_t offset, Sink& sink);

  // The provisional entry emitted for the pending line (its offset is offset_), if any.
  struct Provisional {
    uint64_t start = 0;
    uint64_t size = 0;
    std::string name;
    Entry AsEntry(uint64_t offset) const {
      return {.offset = offset, .start = start, .size = size, .name = name, .provisional = true};
    }
  };

  uint64_t offset_ = 0;
  uint64_t entries_ = 0;
  uint64_t malformed_ = 0;
  std::string buf_;        // the start of a line whose "\n" has not arrived yet
  uint64_t pending_ = 0;   // bytes of that line fed so far (buffered or dropped)
  bool dropping_ = false;  // inside a line longer than kMaxLine: drop up to the next "\n"
  std::optional<Provisional> provisional_;
};

}  // namespace jitsym::perfmap

#endif  // JITSYM_DAEMON_FORMATS_PERFMAP_PERFMAP_PARSER_H_
