// Incremental parser for .NET ReadyToRun perf maps (`<image>.ni.r2rmap`, format version 1), as
// crossgen2 writes them (docs/design/coreclr/botr/r2r-perfmap-format.md in dotnet/runtime; copy
// in shared/specs/r2r-perfmap-format.txt).
//
//   file   := header record*            one entry per line, '\n' or "\r\n", UTF-8
//   entry  := RVA ' ' LENGTH ' ' NAME    RVA, LENGTH hex (crossgen2: %08X, %02X); NAME to the EOL
//   header := FFFFFFFF 00 <signature: 32 hex digits>
//             FFFFFFFE 00 <format version, decimal>
//             FFFFFFFD 00 <OS, decimal>        (optional from here on: older writers stop early)
//             FFFFFFFC 00 <architecture, decimal>
//             FFFFFFFB 00 <ABI, decimal>
//   record := RVA LENGTH NAME            a method split hot/cold appears twice with one name
//
// The header must be exactly that: a wrong token, an entry out of order, repeated or skipped, a
// signature that is not 32 hex digits, a value that is not decimal or a non-zero length rejects
// the whole file (state kFailed; the caller discards what it indexed). A file whose header stops
// after the version (the next line is a record) is accepted with the missing fields unknown. A
// version other than 1 is read but its records are refused (state kRefused): we do not guess.
//
// crossgen1 wrote headerless files named `<image>.ni.{<MVID>}.map` (format version 0); with
// Options::allow_headerless a file whose first line is a record is read as such.
//
// Pure and incremental: fed the file's bytes in order in chunks of any size, it parses complete
// lines only, so a line still being written is never misparsed. Settle() is told when the file
// has stopped growing (for a while, or for good): a record line still waiting for its "\n" is
// then emitted as it stands, marked provisional; when later bytes complete it, the completed
// record is emitted only if it says something else (marked as replacing the provisional one),
// or the provisional one is withdrawn if the completed line is malformed. An unfinished header
// line is left alone.
#ifndef JITSYM_DAEMON_FORMATS_R2RMAP_R2RMAP_PARSER_H_
#define JITSYM_DAEMON_FORMATS_R2RMAP_R2RMAP_PARSER_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::r2rmap {

inline constexpr uint32_t kTokenSignature = 0xFFFFFFFF;
inline constexpr uint32_t kTokenVersion = 0xFFFFFFFE;
inline constexpr uint32_t kTokenOs = 0xFFFFFFFD;
inline constexpr uint32_t kTokenArch = 0xFFFFFFFC;
inline constexpr uint32_t kTokenAbi = 0xFFFFFFFB;
inline constexpr int kHeaderEntries = 5;
inline constexpr uint32_t kSupportedVersion = 1;
inline constexpr size_t kSignatureHexDigits = 32;

// Names from the spec's enumerations; "unknown(N)" for values it does not list.
std::string OsName(uint32_t os);
std::string ArchName(uint32_t arch);
std::string AbiName(uint32_t abi);

struct Header {
  std::string signature;  // 32 hex digits as written (empty: headerless legacy file)
  std::optional<uint32_t> version;
  std::optional<uint32_t> os;
  std::optional<uint32_t> arch;
  std::optional<uint32_t> abi;
  bool legacy = false;  // headerless crossgen1 file (format version 0)
};

struct Record {
  uint64_t offset = 0;  // file offset of the line
  uint32_t rva = 0;
  uint32_t length = 0;
  std::string_view name;
  bool provisional = false;  // the line has no "\n" yet (Parser::Settle)
  bool replaces = false;     // takes the place of the provisional record at this offset
};

// Receives entries in file order; references are valid only during the call.
class Sink {
 public:
  virtual ~Sink() = default;
  // Once, when the header is complete (all five entries, or cut short after the version).
  virtual void OnHeader(const Header& header) {}
  virtual void OnRecord(const Record& record) {}
  // The provisional record emitted for a line no longer stands (the completed line is
  // malformed); `provisional` is the record as it was emitted.
  virtual void OnWithdrawn(const Record& provisional) {}
};

struct Options {
  bool allow_headerless = false;  // crossgen1's `.ni.{MVID}.map` files
  // A longer record line is skipped (malformed); a longer header line rejects the file.
  size_t max_line = 1u << 20;
};

class Parser {
 public:
  enum class State { kHeader, kRecords, kRefused, kFailed };

  explicit Parser(Options options = {}) : options_(options) {}

  void Feed(std::span<const uint8_t> data, Sink& sink);
  // The file has stopped growing: emits the record line waiting for its "\n", if it parses, as a
  // provisional record (once per content). Counted in records() until withdrawn.
  void Settle(Sink& sink);

  State state() const { return state_; }
  bool failed() const { return state_ == State::kFailed; }
  bool refused() const { return state_ == State::kRefused; }
  // The offending line's offset and what was wrong (failed or refused).
  uint64_t error_offset() const { return error_offset_; }
  const std::string& error() const { return error_; }
  // What is known of the header so far (filled entry by entry).
  const Header& header() const { return header_; }
  uint64_t records() const { return records_; }
  // Record lines that could not be parsed (skipped).
  uint64_t malformed() const { return malformed_; }
  uint64_t first_malformed_offset() const { return first_malformed_offset_; }
  uint64_t offset() const { return offset_; }  // bytes consumed (complete lines)

 private:
  void Line(std::string_view line, uint64_t offset, Sink& sink);
  void HeaderLine(uint32_t rva, uint32_t length, std::string_view value, uint64_t offset,
                  Sink& sink);
  void RecordLine(uint32_t rva, uint32_t length, std::string_view name, uint64_t offset,
                  Sink& sink);
  void EndHeader(Sink& sink, uint64_t offset);
  void Fail(uint64_t offset, std::string message);
  void Withdraw(uint64_t offset, Sink& sink);

  // The provisional record emitted for the pending line (at offset_), if any.
  struct Provisional {
    uint32_t rva = 0;
    uint32_t length = 0;
    std::string name;
  };
  std::optional<Provisional> provisional_;

  Options options_;
  State state_ = State::kHeader;
  int next_entry_ = 0;  // header entries read
  Header header_;
  uint64_t offset_ = 0;
  uint64_t records_ = 0;
  uint64_t malformed_ = 0;
  uint64_t first_malformed_offset_ = 0;
  std::vector<char> partial_;  // an incomplete line
  bool dropping_ = false;      // inside a record line longer than max_line
  uint64_t dropped_ = 0;       // its bytes so far
  uint64_t error_offset_ = 0;
  std::string error_;
};

}  // namespace jitsym::r2rmap

#endif  // JITSYM_DAEMON_FORMATS_R2RMAP_R2RMAP_PARSER_H_
