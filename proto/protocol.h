// The jitsymd wire protocol, version 1: newline-delimited JSON over a Unix stream socket.
// docs/protocol.md is the specification; this header is its only implementation, shared by the
// daemon and the client. Nothing else formats or parses protocol JSON.
//
//   request  := {"v":1, "id":ANY?, "op":"lookup"|"explain"|"symbols"|"processes"|"stats"|"ping"|
//                "version", ...}
//   response := {"v":1, "id":ANY?, "ok":true, ...} | {"v":1, "id":ANY?, "ok":false,
//                "error":{"code":STRING, "message":STRING}}
//
// Addresses travel as hex strings ("0x7f..."); plain JSON numbers are accepted on input.
// Times are CLOCK_MONOTONIC nanoseconds (the jitdump clock) as a number or a decimal string, or
// seconds with a decimal point as `perf script` prints them ("219.895069").
#ifndef JITSYM_PROTO_PROTOCOL_H_
#define JITSYM_PROTO_PROTOCOL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "daemon/util/result.h"
#include "proto/string_interner.h"
#include "proto/wire_enums.h"

namespace jitsym::proto {

inline constexpr int kProtocolVersion = 1;
// Requests longer than this are answered with an error and the connection is closed: a line
// that long is not a lookup batch but an attempt to make the daemon buffer without bound.
inline constexpr size_t kMaxRequestBytes = 64 * 1024 * 1024;
// Addresses in one lookup request.
inline constexpr size_t kMaxBatch = 1 << 20;

// Error codes (the "code" member of an error object).
inline constexpr std::string_view kErrBadRequest = "bad_request";
inline constexpr std::string_view kErrUnknownOp = "unknown_op";
inline constexpr std::string_view kErrUnsupportedVersion = "unsupported_version";
inline constexpr std::string_view kErrTooLarge = "too_large";
inline constexpr std::string_view kErrPermission = "permission_denied";
inline constexpr std::string_view kErrNotFound = "not_found";
inline constexpr std::string_view kErrInternal = "internal";
// A connection or memory limit of the daemon (the message names it): retry later. Sent instead
// of a connection (then closed), or instead of an answer to a request too big for the memory
// left (the connection stays open).
inline constexpr std::string_view kErrBusy = "busy";
// The connection sent nothing for the idle timeout, or took longer than the request timeout to
// send one request line; the connection is closed after this response.
inline constexpr std::string_view kErrTimeout = "timeout";

// The socket jitsymd listens on without --socket: /run/jitsymd/jitsymd.sock for root,
// $XDG_RUNTIME_DIR/jitsymd.sock otherwise (/tmp/jitsymd-<uid>.sock without it). The client
// searches further (proto/daemon_socket.h, ClientSocketCandidates).
std::string DefaultSocketPath();

// "0x7f00", "7F00" -> value. Rejects empty input, non-hex characters and overflow.
std::optional<uint64_t> ParseAddress(std::string_view text);
// "0x7f00" (lower case, no padding).
std::string FormatAddress(uint64_t value);
// "123456789" -> ns; "219.895069" -> 219895069000 ns (seconds with a decimal point, at most 9
// fractional digits). Rejects anything else.
std::optional<uint64_t> ParseTime(std::string_view text);
// "1234" -> 1234. Decimal digits only: no sign, no spaces; rejects overflow.
std::optional<uint64_t> ParseDecimal(std::string_view text);

// ---- requests ---------------------------------------------------------------------------------

struct AddressQuery {
  uint64_t addr = 0;
  std::optional<uint64_t> time;  // per-address time; overrides the batch time
  std::string error;             // non-empty: this entry could not be parsed (echoed back)
  std::string raw;               // the input text when error is set
};

// Members of a found lookup result a client may ask for ("fields"); addr, found and error are
// always sent. Fewer members make large batches cheaper for both sides.
enum ResultField : uint32_t {
  kFieldName = 1u << 0,
  kFieldOffset = 1u << 1,
  kFieldStart = 1u << 2,
  kFieldSize = 1u << 3,
  kFieldOrigin = 1u << 4,
  kFieldSource = 1u << 5,
  kFieldLoadedAt = 1u << 6,
  kFieldIncarnation = 1u << 7,
  kFieldPosition = 1u << 8,  // file, line, column
  kFieldImage = 1u << 9,
  kFieldBuildId = 1u << 10,
  kFieldFrames = 1u << 11,
  kFieldClone = 1u << 12,
  kAllFields = 0xffffffffu,
};
// "name" -> kFieldName, ..., "file"/"line"/"column" -> kFieldPosition; 0 for unknown names.
uint32_t ResultFieldFromName(std::string_view name);
// The wire names of the fields in mask, in wire order ("file" stands for the position fields).
std::vector<std::string_view> ResultFieldNames(uint32_t mask);

struct LookupRequest {
  std::optional<int64_t> pid;
  std::optional<std::string> image;     // image lookups (r2rmap, ELF); later formats
  std::optional<std::string> build_id;  // ELF image lookups by build-id (hex)
  bool file_offset = false;  // ELF image lookups: addrs are file offsets, not virtual addresses
  // "image_fd": N: the client opened the image itself and holds it as its descriptor N while
  // the request is answered; the daemon reads that very file (through /proc/<client>/fd/N,
  // checked to be open for reading), and "image" only names it (docs/protocol.md, *ELF images*).
  std::optional<int32_t> image_fd;
  // Restrict answers to one kind of source (an Origin's name; any other name matches nothing).
  std::optional<std::string> origin;
  std::optional<uint64_t> time;  // batch time; absent = now / last known
  std::vector<AddressQuery> addrs;
  uint32_t fields = kAllFields;  // "fields": which members found results carry
  // "strings": true asks for the compact answer form: each distinct string of the response
  // (names, file names, origins, image paths, build ids) is sent once, in a "strings" array
  // before "results", and results refer to it by index. Large batches repeat the same few
  // thousand strings many times; this sends a fraction of the bytes.
  bool strings = false;
  // "encoding":"binary" asks for the binary answer form (docs/protocol.md, *Binary answers*): a
  // JSON header line, then length-prefixed frames of results. What a client decodes from it is
  // exactly what it decodes from the JSON answer, for a fraction of both sides' work.
  bool binary = false;
  // "string_table":"connection", with binary: the answer's strings join a table that lives
  // across the binary answers of this connection (docs/protocol.md, *Strings kept across
  // answers*), so a string is sent once per connection instead of once per answer.
  bool connection_strings = false;
};

// Every range the daemon knows for a process as of now (what a perf map of it would hold).
struct SymbolsRequest {
  int64_t pid = 0;
};

// Why one address answers what it does: {"op":"explain","pid":N,"addr":A,"time":T} or with
// "image" instead of "pid".
struct ExplainRequest {
  std::optional<int64_t> pid;
  std::optional<std::string> image;
  uint64_t addr = 0;
  std::optional<uint64_t> time;     // absent = now / last known
  std::optional<int32_t> image_fd;  // as LookupRequest's
};

struct ProcessesRequest {};
struct StatsRequest {};
struct PingRequest {};
struct VersionRequest {};

using RequestBody = std::variant<LookupRequest, ProcessesRequest, StatsRequest, PingRequest,
                                 VersionRequest, SymbolsRequest, ExplainRequest>;

struct Request {
  std::string id_json;  // the request's "id" re-serialized as JSON, echoed verbatim; empty if none
  RequestBody body;
};

// ---- responses --------------------------------------------------------------------------------

// The string members of lookup answers are views: a batch of a million answers would otherwise
// allocate millions of strings (native answers carry several frames each). The daemon's views
// point into the index and the modules, the decoder's into its own copy of the text; either way
// LookupResponse owns what they point into, so results are read only while it is held.
struct Frame {  // one inlined frame (native code), innermost first
  std::string_view name;
  std::string_view file;
  uint32_t line = 0;
  uint32_t column = 0;
};

struct LookupResult {
  uint64_t addr = 0;
  bool found = false;
  // When not found: why (kNone for an input error), and a sentence for a person (may be empty).
  // When found: kNone, or kNoDebugInfo for an answer without the frames debug info would give
  // (a split DWARF part is missing; detail names it).
  Reason reason = Reason::kNone;  // next to `found`: in its padding
  std::string error;              // per-address error (bad input, permission); found is false
  std::string raw;  // with error: the unparsable input, sent as "addr" instead of the value
  std::string detail;
  // When found:
  std::string_view name;
  uint64_t offset = 0;  // addr - start
  uint64_t start = 0;
  uint64_t size = 0;
  Origin origin = Origin::kUnknown;
  std::string_view image;   // image name or path, when the answer comes from one
  std::string_view source;  // the file the answer was read from
  std::string_view file;    // source position, when debug info gives one
  uint32_t line = 0;
  uint32_t column = 0;
  std::optional<uint64_t> loaded_at;    // when this code became valid (CLOCK_MONOTONIC ns)
  std::optional<uint64_t> incarnation;  // which incarnation of the pid answered
  std::string_view build_id;
  std::vector<Frame> frames;
  std::string_view clone;  // native: the clone suffix (".part.0", ".cold") of the code at addr
};

// Makes *r a default result again, keeping the storage of its strings and frames (decoders
// reuse results from one response to the next).
void ResetLookupResult(LookupResult* r);

struct LookupResponse {
  std::vector<LookupResult> results;  // in request order, one per address
  // Owns what the results' string members point into: made by the daemon (the index view, the
  // modules and image tables that answered), or by the client (the connection's string table,
  // for a binary answer that uses one). Copies of the response share it.
  std::shared_ptr<const void> keepalive;
  uint32_t fields = kAllFields;  // members to encode (from the request)
  bool strings = false;          // encode the compact form (LookupRequest::strings)
  // Encoding: the binary form (LookupRequest::binary). Decoding: the header line said binary
  // frames follow it (DecodeBinaryLookupFrames reads them).
  bool binary = false;
  // A binary answer's header member "strings_kept" (encoding: what to write; decoding: what was
  // read): the answer uses the connection's string table, of which it keeps this many entries
  // (0: a new table, else all of them).
  std::optional<uint64_t> strings_kept;
  // Decoded: the unescaped text of every string of the response (the compact form's table and
  // the plain form's members), which the results' string members point into. Copies of the
  // response share it; the next decode into this response reuses it when nobody else does.
  std::shared_ptr<std::string> text;
};

// One range of a symbols answer: code at [start, start + size) is `name` now.
struct SymbolEntry {
  uint64_t start = 0;  // absolute address (image ranges with the image base applied)
  uint64_t size = 0;
  std::string name;
  Origin origin = Origin::kUnknown;
  std::string image;  // r2rmap answers: the image name
};

struct SymbolsResponse {
  int64_t pid = 0;
  uint64_t incarnation = 0;
  std::vector<SymbolEntry> symbols;  // sorted by start, not overlapping
};

struct SourceInfo {
  Origin origin = Origin::kUnknown;
  std::string path;
  SourceState state = SourceState::kUnknown;
  uint64_t ranges = 0;
  uint64_t bytes_read = 0;
  std::string error;  // last error, if state is "error"
};

struct ProcessInfo {
  int64_t pid = 0;
  uint64_t incarnation = 0;
  bool alive = false;
  std::optional<uint32_t> uid;         // the process's owner, when known
  std::optional<uint64_t> first_time;  // first/last record timestamps (CLOCK_MONOTONIC ns)
  std::optional<uint64_t> last_time;
  uint64_t ranges = 0;
  // Thread ids remembered for lookups by thread id after the exit; nullopt when none are.
  std::optional<uint64_t> threads;
  std::vector<SourceInfo> sources;
  // Namespaces and container identity (omitted when unknown): the pid inside its own pid
  // namespace, the pid and mount namespace inodes, the cgroup v2 path.
  std::optional<uint32_t> nspid;
  std::optional<uint64_t> pid_ns;
  std::optional<uint64_t> mnt_ns;
  std::optional<std::string> cgroup;
};

// A side file naming a pid whose writer could not be told (pid numbers repeat in containers).
struct UnattachedInfo {
  std::string path;
  uint32_t uid = 0;  // the file's owner
  std::string reason;
};

struct ProcessesResponse {
  std::vector<ProcessInfo> processes;
  std::vector<UnattachedInfo> unattached;
};

struct StatsResponse {
  uint64_t processes = 0;
  uint64_t ranges = 0;        // indexed code ranges, all processes and images
  uint64_t memory_bytes = 0;  // bytes held by the index (ranges, names, debug info)
  uint64_t files_followed = 0;
  uint64_t files_failed = 0;  // files stopped on a corrupt record
  uint64_t bytes_ingested = 0;
  uint64_t records_ingested = 0;
  uint64_t files_untrusted = 0;   // ignored: owned by neither the process's owner nor root
  uint64_t files_pending = 0;     // waiting for their process to appear (now)
  uint64_t files_over_limit = 0;  // refused or stopped by a configured limit
  uint64_t files_unattached = 0;  // naming a pid whose writer could not be told
  uint64_t denied = 0;            // addresses and requests refused: permission denied
  uint64_t queries = 0;           // requests served
  uint64_t addresses = 0;         // addresses looked up
  uint64_t connections = 0;       // connections accepted
  uint64_t errors = 0;            // error responses sent
  uint64_t uptime_ns = 0;
  uint64_t processes_exited = 0;     // exited incarnations still indexed (retention)
  uint64_t evictions = 0;            // incarnations evicted since start (retention or budget)
  uint64_t memory_budget_bytes = 0;  // 0: no budget
  // Native files' readers (operations.md, "Parse workers").
  uint64_t parse_workers = 0;          // worker processes running now
  uint64_t parse_workers_started = 0;  // since start-up
  uint64_t parse_failures = 0;         // requests whose worker was killed, died or broke down
  uint64_t parse_refused = 0;          // requests refused: a file or worker backing off, busy
  uint64_t parse_tables_bytes = 0;     // the workers' anonymous memory (their tables)
};

// ---- explain: the report behind one answer ----

// A source file of an incarnation, with what the daemon made of it.
struct ExplainSource {
  Origin origin = Origin::kUnknown;
  std::string path;
  std::optional<uint32_t> owner;  // the file's owner
  // Why it was believed: "root" (owned by root) or "process owner" (by the process's owner).
  std::string trust;
  SourceState state = SourceState::kUnknown;
  uint64_t ranges = 0;
  uint64_t bytes_read = 0;
  std::optional<uint64_t> records;  // records parsed
  std::string error;                // why it stopped, if it did ("offset N: ...")
};

struct ExplainIncarnation {
  uint64_t incarnation = 0;
  bool alive = false;
  std::optional<uint32_t> uid;
  std::optional<uint64_t> start_time;  // CLOCK_MONOTONIC ns
  std::optional<uint64_t> exit_time;
  std::optional<uint32_t> nspid;
  std::optional<std::string> cgroup;
  std::vector<ExplainSource> sources;  // in precedence order
};

// One definition that covered the address, and when it answered lookups: [from, to).
struct ExplainDefinition {
  std::optional<uint64_t> incarnation;  // pid explains: whose source
  Origin origin = Origin::kUnknown;
  std::string source;    // the file (or image) it was read from
  std::string name;      // empty when removed
  bool removed = false;  // the code moved away or was unloaded: nothing is there
  uint64_t start = 0;
  uint64_t size = 0;
  std::optional<uint64_t> from;  // absent: as long as the image is mapped
  std::optional<uint64_t> to;    // absent: still
  bool picked = false;           // this one gave the answer
};

// A file naming the process that answers nothing: refused or left unattached.
struct ExplainIgnored {
  std::string path;
  std::string reason;
};

struct ExplainResponse {
  std::optional<int64_t> pid;
  std::optional<std::string> image;
  uint64_t addr = 0;
  std::optional<uint64_t> time;
  std::vector<ExplainIncarnation> incarnations;  // oldest first
  std::vector<ExplainDefinition> definitions;    // per source, in the order they were made
  uint64_t definitions_omitted = 0;              // older definitions left out (bounded list)
  std::vector<ExplainIgnored> ignored;
  // What `lookup` answers for the same (pid or image, addr, time): one result.
  LookupResponse answer;
  std::string rule;  // the rule that picked it, for people
};

struct PingResponse {};
struct VersionResponse {
  std::string daemon_version;
  int protocol = kProtocolVersion;
};

struct ErrorResponse {
  std::string code;
  std::string message;
};

using ResponseBody = std::variant<LookupResponse, ProcessesResponse, StatsResponse, PingResponse,
                                  VersionResponse, ErrorResponse, SymbolsResponse, ExplainResponse>;

struct Response {
  std::string id_json;  // echoed from the request
  ResponseBody body;
};

// ---- codec ------------------------------------------------------------------------------------

// Parses one request line (without the newline). On failure returns an ErrorResponse that the
// daemon sends back; the id is recovered when the line was valid JSON with an "id".
struct DecodeRequestResult {
  std::optional<Request> request;
  std::optional<Response> error;
};
DecodeRequestResult DecodeRequest(std::string_view line);

// Appends the encoded request/response and a trailing '\n' to *out.
void EncodeRequest(const Request& request, std::string* out);
void EncodeResponse(const Response& response, std::string* out);

// Parses a response line. A line that is not a valid response is a kMalformed error saying why.
Result<Response> DecodeResponse(std::string_view line);
// As DecodeResponse, into *response, reusing its storage (strings, vectors) when the body kind
// is the same as last time: the client's hot loop decodes one lookup response per batch.
Status DecodeResponseInto(std::string_view line, Response* response);

// One element of a symbols or processes answer, as the whole answer's decoder reads it, for a
// client that reads the answer element by element (ArrayAnswerReader).
Status DecodeSymbolEntry(std::string_view text, SymbolEntry* entry);
Status DecodeProcessInfo(std::string_view text, ProcessInfo* process);

// One member object exactly as it appears on the wire (no newline): `jitsym --json` prints these.
void EncodeLookupResult(const LookupResult& result, std::string* out, uint32_t fields = kAllFields);
void EncodeProcessInfo(const ProcessInfo& process, std::string* out);
void EncodeExplain(const ExplainResponse& explain, std::string* out);
void EncodeStats(const StatsResponse& stats, std::string* out);
// What every response line starts with: {"v":1 and, when there is one, the id.
void EncodeResponseHead(std::string_view id_json, std::string* out);
// A plain lookup answer in pieces, for answers produced slice by slice: Begin, the results
// (EncodeLookupResult, ',' between them), then End give exactly the bytes EncodeResponse gives
// for the whole LookupResponse without "strings".
void EncodeLookupResponseBegin(std::string_view id_json, std::string* out);
void EncodeLookupResponseEnd(std::string* out);

// The other answers that may be large, in pieces, for the daemon to send while it produces
// them (docs/protocol.md, *Large answers*). As for lookups, Begin, the elements (',' between
// them) and End give exactly the bytes EncodeResponse gives for the whole answer, and each
// element has one encoder, which EncodeResponse uses too.
//   symbols:   SymbolsBegin, EncodeSymbolEntry..., ListEnd
//   processes: ProcessesBegin, EncodeProcessInfo..., [UnattachedBegin, EncodeUnattachedInfo...,]
//              ListEnd (the unattached files only when there are any)
//   explain:   ExplainAnswerSteps
void EncodeSymbolsResponseBegin(std::string_view id_json, int64_t pid, uint64_t incarnation,
                                std::string* out);
void EncodeSymbolEntry(const SymbolEntry& entry, std::string* out);
void EncodeProcessesResponseBegin(std::string_view id_json, std::string* out);
void EncodeUnattachedBegin(std::string* out);
void EncodeUnattachedInfo(const UnattachedInfo& file, std::string* out);
// The end of a symbols or processes answer: the list, the object, the line.
void EncodeListResponseEnd(std::string* out);
// An answer sent in pieces that fails after its first piece cannot take back "ok":true: once
// what is open in it is closed (the list, ...), this ends the line with an "error" member, as
// an error response has it. A client must take an answer with "error" for a failure.
void EncodeAnswerFailure(std::string_view code, std::string_view message, std::string* out);

// An explain answer written in steps (the head, then one incarnation, definition or ignored
// file at a time, then the end), together the bytes EncodeResponse writes for it. Holds
// references: `explain` must outlive it.
class ExplainAnswerSteps {
 public:
  ExplainAnswerSteps(std::string id_json, const ExplainResponse& explain)
      : id_json_(std::move(id_json)), explain_(explain) {}
  // Appends the next step; false once the line is complete (its newline written). A step that
  // throws leaves the steps where they were.
  bool Step(std::string* out);
  // What closes the report after the steps so far (the list and object open), for
  // EncodeAnswerFailure to follow.
  void Close(std::string* out) const;

 private:
  enum class Part { kHead, kIncarnations, kDefinitions, kIgnored, kDone };
  std::string id_json_;
  const ExplainResponse& explain_;
  Part part_ = Part::kHead;
  size_t next_ = 0;  // the next element of the current list
};
// The bytes of a result's string members (names, paths, frames); about the size of its text
// in the compact form's string table.
size_t LookupResultStringBytes(const LookupResult& result);
// The stats members as (wire name, value), in wire order.
std::vector<std::pair<std::string_view, uint64_t>> StatsMembers(const StatsResponse& stats);

// ---- binary lookup answers (docs/protocol.md, *Binary answers*) -----------------------------

// The "encoding" a client asks for; a daemon that does not know it answers in JSON.
inline constexpr std::string_view kBinaryEncoding = "binary";
// A frame is at most this long (its 4-byte length excluded): what a reader buffers before it
// can check anything.
inline constexpr size_t kMaxBinaryFrameBytes = size_t{64} << 20;
// The size the daemon makes frames (a frame ends with the result that reaches it): a
// client's buffer stays small, the string table stays a cache-sized hash.
inline constexpr size_t kBinaryFrameTarget = size_t{1} << 20;
// Bytes of a frame's length prefix; a prefix of 0 ends the answer.
inline constexpr size_t kBinaryFramePrefixBytes = 4;

// The "string_table" a client asks for to keep strings across the answers of its connection.
inline constexpr std::string_view kConnectionStringTable = "connection";

// The header line, {"v":1,"id":ID,"ok":true,"encoding":"binary"} and '\n'; with strings_kept,
// also "strings_kept":N (the answer uses the connection's string table).
void EncodeBinaryLookupBegin(std::string_view id_json, std::string* out,
                             std::optional<uint64_t> strings_kept = std::nullopt);
// Writes the frames of one binary answer. Strings are sent once per answer: a frame may refer
// to any string an earlier frame of the answer sent. The encoder remembers strings by address,
// so whoever owns them says when they may go away (ForgetStrings): later frames then send them
// again under new indices.
class BinaryAnswerEncoder {
 public:
  // Appends one frame holding results[0, n) and returns n: results are added until the frame
  // reaches max_bytes (at least one, if there is one).
  size_t EncodeFrame(std::span<const LookupResult> results, uint32_t fields, size_t max_bytes,
                     std::string* out);
  // The strings seen so far may be freed: never refer to them again.
  void ForgetStrings();
  // Starts a new table (a connection's table, at the start of an answer).
  void Reset();
  // Strings sent so far (the next one's index); whether any were forgotten; the bytes of the
  // strings' text sent since the last Reset.
  uint64_t sent() const { return base_ + strings_.strings().size(); }
  bool forgot() const { return base_ > 0; }
  uint64_t text_bytes() const { return text_bytes_; }

 private:
  StringInterner strings_;
  uint32_t base_ = 0;  // strings sent before strings_ was cleared
  uint64_t text_bytes_ = 0;
};

// The client's side of a connection-wide string table: the text of every string the
// connection's answers sent into it, copied into chunks that never move, so that results
// decoded from one answer stay valid while later answers add strings. A table the daemon
// starts anew is a new object; the old one lives as long as the responses that point into it
// (their keepalive).
class ConnectionStrings {
 public:
  // Copies s in as the next entry; the view returned stays valid as long as this table.
  std::string_view Add(std::string_view s);
  std::string_view operator[](size_t i) const { return table_[i]; }
  size_t size() const { return table_.size(); }

 private:
  std::vector<std::string_view> table_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t used_ = 0;  // bytes used of the last chunk
  size_t room_ = 0;  // bytes left in it
};
// The end marker (a frame length of 0).
void EncodeBinaryLookupEnd(std::string* out);
// The length a frame prefix announces (the 4 bytes little-endian).
uint32_t BinaryFrameLength(const char* prefix);
// Decodes the frames that follow a binary header line, every length prefix and the end marker
// included (nothing after it), into response->results (reusing their storage). The results'
// strings point into `frames`, which must outlive them (ClientConnection reads the frames into
// response->text). Malformed input is an error naming the byte offset, never a crash.
// With `strings` (a header with "strings_kept"), strings refer to that connection-wide table
// and new ones are copied into it.
Status DecodeBinaryLookupFrames(std::string_view frames, LookupResponse* response,
                                ConnectionStrings* strings = nullptr);

// The error response for a request, keeping its id.
Response MakeErrorResponse(std::string id_json, std::string_view code, std::string message);

}  // namespace jitsym::proto

#endif  // JITSYM_PROTO_PROTOCOL_H_
