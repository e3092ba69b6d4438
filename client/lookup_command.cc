// jitsym lookup: addresses in, one symbol line out per address, in input order.
//
// Addresses come from the command line or from stdin ("ADDR [TIME]" per line). They are sent in
// batches, with a few batches in flight at once: a writer thread reads input, builds and sends
// requests; the calling thread reads responses and prints. A fixed pool of batch buffers bounds
// memory whatever the input size and keeps the two sides in step.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "client/args.h"
#include "client/blocking_queue.h"
#include "client/command.h"
#include "client/daemon_call.h"
#include "client/image_files.h"
#include "client/line_reader.h"
#include "client/output.h"
#include "client/pipeline.h"
#include "client/time_check.h"
#include "proto/client_connection.h"
#include "proto/protocol.h"

namespace jitsym::client {
namespace {

constexpr char kUsage[] =
    "usage: jitsym lookup (--pid PID | --image IMAGE | --build-id HEX) [--file-offset]\n"
    "                     [--time T] [--origin O] [--inlines | --json] [ADDR...]\n"
    "\n"
    "Resolves code addresses to symbols. Without ADDR arguments, reads stdin: one\n"
    "`ADDR [TIME]` per line. Prints one line per address, in input order:\n"
    "  ADDR<TAB>NAME+0xOFF<TAB>ORIGIN[<TAB>FILE:LINE[:COL]]\n"
    "  or, not found:  ADDR<TAB>?\?<TAB>REASON[: DETAIL]\n"
    "\n"
    "  --pid PID       process the addresses belong to\n"
    "  --image IMAGE   look up RVAs in an image (r2rmap): its name (with or without .dll),\n"
    "                  a path to the dll, or its signature in hex; or the path of an ELF\n"
    "                  file (ADDR is a virtual address, as addr2line -e takes it)\n"
    "  --build-id HEX  look up addresses in the ELF file with this build id\n"
    "  --file-offset   ELF lookups: ADDR is a file offset (as perf's dso offsets)\n"
    "  --time T        when the addresses were sampled: CLOCK_MONOTONIC nanoseconds, or\n"
    "                  seconds with a decimal point as perf script prints (219.895069);\n"
    "                  a TIME on an input line overrides it. A time that looks like\n"
    "                  microseconds, milliseconds or a wall-clock epoch is warned about\n"
    "                  once on stderr\n"
    "  --origin O      only answers from this kind of source: jitdump, perfmap, mlpd, r2rmap,\n"
    "                  elf\n"
    "  --inlines       native answers: append the chain of inlined frames, innermost\n"
    "                  first, the frames `llvm-symbolizer --inlines` prints, two columns\n"
    "                  each: <TAB>NAME<TAB>FILE:LINE[:COL]; a position not known is ??:0\n"
    "                  (and so is the position column of an answer without one)\n"
    "  --json          one JSON object per address per line (JSON Lines)\n"
    "  --batch N       addresses per request (default 8192; fewer when the input pauses,\n"
    "                  10 ms after a request's first line at the latest)\n"
    "  --wire E        how answers travel: binary (default; JSON from a daemon that does\n"
    "                  not speak it) or json. The output is the same either way\n"
    "\n"
    "ADDR is hex with or without 0x. Unknown addresses are normal (exit status 0); a malformed\n"
    "line prints `LINE<TAB>?\?<TAB>error: ...` and the rest goes on. REASON is one of\n"
    "unknown_process, permission_denied, no_code, before_code, before_start, after_exit,\n"
    "wrong_clock, file_ignored, no_symbol, no_debug_info, image_unknown, image_unreadable,\n"
    "native_failed.\n"
    "Exit status: 0 answered, 1 daemon error, 2 usage (or no valid address in the input),\n"
    "3 process unknown to jitsymd, 4 permission denied for the process.\n";

constexpr size_t kDefaultBatch = 8192;
constexpr size_t kBatchesInFlight = 4;

// Where the addresses come from.
class AddressSource {
 public:
  virtual ~AddressSource() = default;
  virtual bool Next(std::string_view* line) = 0;
  // False when Next() would wait for input past `deadline`: the batch so far is sent first.
  virtual bool Ready(BatchWindow::Clock::time_point deadline) = 0;
  virtual void Wake() {}
  virtual std::string error() const { return {}; }
};

class ArgsSource : public AddressSource {
 public:
  explicit ArgsSource(const std::vector<std::string>& args) : args_(args) {}
  bool Next(std::string_view* line) override {
    if (next_ >= args_.size()) return false;
    *line = args_[next_++];
    return true;
  }
  bool Ready(BatchWindow::Clock::time_point) override { return true; }

 private:
  const std::vector<std::string>& args_;
  size_t next_ = 0;
};

class StdinSource : public AddressSource {
 public:
  StdinSource() : reader_(STDIN_FILENO) {}
  bool Next(std::string_view* line) override { return reader_.Next(line); }
  bool Ready(BatchWindow::Clock::time_point deadline) override { return reader_.Ready(deadline); }
  void Wake() override { reader_.Wake(); }
  std::string error() const override { return reader_.error(); }

 private:
  LineReader reader_;
};

// One request's worth of input lines.
struct Batch {
  proto::Request request;
  // Per input line, in order: >= 0 is an index into the request's addrs, < 0 is -1 - index
  // into `bad` (a line that could not be parsed, answered locally).
  std::vector<int32_t> slots;
  std::vector<proto::LookupResult> bad;

  proto::ClientConnection* via = nullptr;  // the connection its request went out on
  // Its answer, read by the decoder thread; read_ok false: read_error says why there is none.
  proto::Response response;
  bool read_ok = true;
  std::string read_error;

  proto::LookupRequest& lookup() { return std::get<proto::LookupRequest>(request.body); }
  void Clear() {
    lookup().addrs.clear();
    slots.clear();
    bad.clear();
  }
};

std::string_view Trim(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const size_t last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// Adds one input line to the batch; blank lines are skipped. `times` (null: not checked) warns
// about the first time that looks like another clock or unit.
void AddLine(std::string_view line, Batch* batch, TimeChecker* times) {
  line = Trim(line);
  if (line.empty()) return;
  const size_t space = line.find_first_of(" \t");
  const std::string_view addr_text = line.substr(0, space);
  const std::string_view time_text =
      space == std::string_view::npos ? std::string_view() : Trim(line.substr(space));
  const std::optional<uint64_t> addr = proto::ParseAddress(addr_text);
  std::optional<uint64_t> time;
  if (!time_text.empty()) time = proto::ParseTime(time_text);
  if (time && times != nullptr) times->Check(*time, time_text);
  if (!addr || (!time_text.empty() && !time)) {
    proto::LookupResult& bad = batch->bad.emplace_back();
    bad.error = addr ? "invalid time" : "invalid address";
    bad.raw = line;
    batch->slots.push_back(-static_cast<int32_t>(batch->bad.size()));
    return;
  }
  std::vector<proto::AddressQuery>& addrs = batch->lookup().addrs;
  proto::AddressQuery& q = addrs.emplace_back();
  q.addr = *addr;
  q.time = time;
  batch->slots.push_back(static_cast<int32_t>(addrs.size() - 1));
}

void AppendHex(uint64_t value, std::string* out) {
  char buf[18];
  char* p = buf + sizeof(buf);
  do {
    *--p = "0123456789abcdef"[value & 0xF];
    value >>= 4;
  } while (value != 0);
  out->append("0x");
  out->append(p, buf + sizeof(buf) - p);
}

void AppendDecimal(uint64_t value, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, end);
}

void AppendPosition(std::string_view file, uint32_t line, uint32_t column, std::string* out) {
  AppendClean(file, out);
  out->push_back(':');
  AppendDecimal(line, out);
  if (column > 0) {
    out->push_back(':');
    AppendDecimal(column, out);
  }
}

// `addr` is the address asked for (the daemon's echo is not trusted for the output). With
// `inlines`, the position column is always there and the inlined frames follow it.
void AppendText(const proto::LookupResult& r, uint64_t addr, bool inlines, std::string* out) {
  if (!r.raw.empty() && !r.error.empty()) {
    AppendClean(r.raw, out);
  } else {
    AppendHex(addr, out);
  }
  if (!r.found) {
    out->append("\t??");
    if (r.reason != proto::Reason::kNone) {  // the third column: why, then what a person reads
      out->push_back('\t');
      out->append(proto::ReasonName(r.reason));
      if (!r.detail.empty()) {
        out->append(": ");
        AppendClean(r.detail, out);
      }
    } else if (!r.error.empty()) {
      out->append("\terror: ");
      AppendClean(r.error, out);
    }
    out->push_back('\n');
    return;
  }
  out->push_back('\t');
  AppendClean(r.name, out);
  out->append("+");
  AppendHex(r.offset, out);
  out->push_back('\t');
  AppendClean(proto::OriginName(r.origin), out);
  if (!r.file.empty()) {
    out->push_back('\t');
    AppendPosition(r.file, r.line, r.column, out);
  } else if (inlines) {
    out->append("\t??:0");
  }
  if (inlines) {
    for (const proto::Frame& frame : r.frames) {
      out->push_back('\t');
      AppendClean(frame.name, out);
      out->push_back('\t');
      if (frame.file.empty()) {
        out->append("??:0");
      } else {
        AppendPosition(frame.file, frame.line, frame.column, out);
      }
    }
  }
  out->push_back('\n');
}

// Whether a second connection may serve full batches: the daemon answers each connection's
// requests in order on one thread, so two connections let it work on two batches at once, which
// pays off only when this process may use two cores (the daemon then likely has them too).
bool MayUseTwoConnections() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return ::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) >= 2;
}

class LookupPipeline {
 public:
  // `connect_more` opens another connection to the daemon, or returns null (then one serves).
  LookupPipeline(proto::ClientConnection& connection,
                 std::function<std::unique_ptr<proto::ClientConnection>()> connect_more,
                 AddressSource& source, const proto::LookupRequest& prototype, size_t batch_size,
                 bool json, bool inlines, TimeChecker* times)
      : connection_(connection),
        connect_more_(std::move(connect_more)),
        source_(source),
        batch_size_(batch_size),
        json_(json),
        inlines_(inlines),
        times_(times) {
    for (auto& batch : batches_) {
      batch.request.body = prototype;
      batch.lookup().addrs.reserve(batch_size);
      free_.Push(&batch);
    }
  }

  int Run() {
    return RunPipeline([this] { WriterLoop(); }, [this](std::string* e) { return ReadAndPrint(e); },
                       [this] { Unblock(); }, &writer_error_);
  }

 private:
  // Fills a batch from the input; false when the input is exhausted.
  bool Fill(Batch* batch) {
    std::string_view line;
    BatchWindow window;
    while (batch->slots.size() < batch_size_) {
      if (!batch->slots.empty() && !window.TakesMore(source_, batch->slots.size())) return true;
      if (!source_.Next(&line)) return false;
      if (batch->slots.empty()) window.Open();
      AddLine(line, batch, times_);
    }
    return true;
  }

  void WriterLoop() {
    std::string encoded;
    for (;;) {
      std::optional<Batch*> next = free_.Pop();
      if (!next) break;
      Batch* batch = *next;
      const bool more = Fill(batch);
      if (!more && !source_.error().empty()) writer_error_ = source_.error();
      if (batch->slots.empty()) break;
      const bool send = !batch->lookup().addrs.empty();
      if (send) {
        encoded.clear();
        proto::EncodeRequest(batch->request, &encoded);
      }
      batch->via = Route(*batch);
      in_flight_.Push(batch);  // before sending: the reader then knows what to expect
      std::string error;
      if (send && !batch->via->Send(encoded, &error)) {
        if (writer_error_.empty()) writer_error_ = error;
        batch->via->Shutdown();
        break;
      }
      if (!more) break;
    }
    in_flight_.Close();
  }

  // The connection a batch goes out on: full batches (bulk input) alternate between two
  // connections when there are cores for the daemon to answer both at once; everything else,
  // and everything when the second connection cannot be had, goes on the first.
  proto::ClientConnection* Route(Batch& batch) {
    if (batch.slots.size() < batch_size_ || batch.lookup().addrs.empty()) return &connection_;
    if (!second_tried_) {
      second_tried_ = true;
      if (MayUseTwoConnections() && connect_more_) {
        second_owner_ = connect_more_();
        second_.store(second_owner_.get());
      }
    }
    if (!second_owner_) return &connection_;
    use_second_ = !use_second_;
    return use_second_ ? second_owner_.get() : &connection_;
  }

  // Wakes every thread of the pipeline that may wait: the writer (for a free batch, for input,
  // in a send), the decoder (in a read). May be called more than once.
  void Unblock() {
    free_.Close();
    connection_.Shutdown();
    if (auto* second = second_.load()) second->Shutdown();
    source_.Wake();
  }

  // Reading and decoding an answer is a third of the reader's work: a thread of its own does
  // it, so that the next answer is decoded while this one is printed.
  int ReadAndPrint(std::string* error) {
    std::thread decoder([this] { DecodeLoop(); });
    const int status = PrintLoop(error);
    if (status != kExitOk) Unblock();
    decoder.join();
    return status;
  }

  // Reads each batch's answer into the batch, in the order the requests went out.
  void DecodeLoop() {
    for (;;) {
      std::optional<Batch*> next = in_flight_.Pop();
      if (!next) break;
      Batch* batch = *next;
      batch->read_ok = batch->lookup().addrs.empty() ||
                       batch->via->ReadResponse(&batch->response, &batch->read_error);
      decoded_.Push(batch);
      if (!batch->read_ok) break;
    }
    decoded_.Close();
  }

  // Prints answers in input order. Error responses are reported here; other failures are left
  // in *error for Run() to report once the writer has stopped.
  int PrintLoop(std::string* error) {
    Output output;
    for (;;) {
      if (decoded_.Empty()) output.Flush();  // waiting: show what we have (interactive use)
      std::optional<Batch*> next = decoded_.Pop();
      if (!next) break;
      Batch* batch = *next;
      const std::vector<proto::AddressQuery>& addrs = batch->lookup().addrs;
      const std::vector<proto::LookupResult>* results = nullptr;
      if (!addrs.empty()) {
        const proto::Response& response = batch->response;
        if (!batch->read_ok) {
          output.Flush();
          *error = std::move(batch->read_error);
          return kExitError;
        }
        if (const auto* err = std::get_if<proto::ErrorResponse>(&response.body)) {
          output.Flush();
          ReportErrorResponse(*err);
          return kExitError;
        }
        const auto* lookup = std::get_if<proto::LookupResponse>(&response.body);
        if (lookup == nullptr || lookup->results.size() != addrs.size()) {
          output.Flush();
          *error = "jitsymd answered " + std::to_string(addrs.size()) + " addresses with " +
                   std::to_string(lookup == nullptr ? 0 : lookup->results.size()) + " results";
          return kExitError;
        }
        results = &lookup->results;
      }
      std::string& out = output.buffer();
      for (int32_t slot : batch->slots) {
        const proto::LookupResult& r = slot >= 0 ? (*results)[static_cast<size_t>(slot)]
                                                 : batch->bad[static_cast<size_t>(-1 - slot)];
        if (json_) {
          proto::EncodeLookupResult(r, &out);
          out.push_back('\n');
        } else {
          AppendText(r, slot >= 0 ? addrs[static_cast<size_t>(slot)].addr : 0, inlines_, &out);
        }
        if (r.reason == proto::Reason::kUnknownProcess) unknown_process_ = true;
        if (r.reason == proto::Reason::kPermissionDenied) denied_ = true;
        ++(slot >= 0 ? asked_ : invalid_);
        // Per answer, not per batch: the buffer then stays at its reserved size (a batch of
        // answers with inlined frames is megabytes) and in cache.
        output.MaybeFlush();
      }
      batch->Clear();
      free_.Push(batch);
    }
    if (!output.Flush()) {
      *error = "cannot write output";
      return kExitError;
    }
    if (invalid_ > 0 && asked_ == 0) {
      // Every line was refused by the client: a script fed the wrong input, not an answer.
      std::fprintf(stderr, "jitsym: no valid address in the input (%zu invalid line%s)\n", invalid_,
                   invalid_ == 1 ? "" : "s");
      return kExitUsage;
    }
    return ExitStatusFor(unknown_process_, denied_);
  }

  proto::ClientConnection& connection_;
  std::function<std::unique_ptr<proto::ClientConnection>()> connect_more_;
  // The second connection: made and used by the writer; the reader reads its answers and may
  // shut it down (through second_) to unblock the writer.
  std::unique_ptr<proto::ClientConnection> second_owner_;
  std::atomic<proto::ClientConnection*> second_{nullptr};
  bool second_tried_ = false;
  bool use_second_ = false;
  AddressSource& source_;
  const size_t batch_size_;
  const bool json_;
  const bool inlines_;
  TimeChecker* const times_;  // the writer thread's
  Batch batches_[kBatchesInFlight];
  BlockingQueue<Batch*> free_;
  BlockingQueue<Batch*> in_flight_;  // sent, answer not read yet
  BlockingQueue<Batch*> decoded_;    // answer read, not printed yet
  std::string writer_error_;         // the writer's; read after join
  bool unknown_process_ = false;
  bool denied_ = false;
  size_t asked_ = 0;    // addresses sent to the daemon
  size_t invalid_ = 0;  // input lines refused here (invalid address or time)
};

}  // namespace

int RunLookup(const GlobalOptions& globals, const std::vector<std::string>& args) {
  std::optional<std::string> pid_text, image, build_id, time_text, origin, batch_text, wire;
  bool json = false;
  bool inlines = false;
  bool file_offset = false;
  ArgParser parser("lookup", kUsage);
  parser.AddValue("--pid", &pid_text);
  parser.AddValue("--image", &image);
  parser.AddValue("--build-id", &build_id);
  parser.AddFlag("--file-offset", &file_offset);
  parser.AddValue("--time", &time_text);
  parser.AddValue("--origin", &origin);
  parser.AddValue("--batch", &batch_text);
  parser.AddFlag("--json", &json);
  parser.AddFlag("--inlines", &inlines);
  parser.AddValue("--wire", &wire);
  std::vector<std::string> addrs;
  if (auto status = parser.Parse(args, &addrs)) return *status;
  if (wire && *wire != "binary" && *wire != "json") {
    return parser.UsageError("--wire is binary or json");
  }
  if (json && inlines) {
    return parser.UsageError("--inlines is for text output (--json always has the frames)");
  }
  // Caught here, before anything is sent: the daemon refuses them too (bad_request).
  // (--image PATH with --build-id is a check: that file must have that build id.)
  if (pid_text && (image || build_id)) {
    return parser.UsageError("--pid excludes --image and --build-id");
  }
  if (file_offset && !image && !build_id) {
    return parser.UsageError("--file-offset is for ELF lookups (--image PATH or --build-id)");
  }

  proto::LookupRequest prototype;
  if (pid_text) {
    const std::optional<uint64_t> pid = proto::ParseDecimal(*pid_text);
    if (!pid || *pid == 0 || *pid > 0x7fffffff) {
      return parser.UsageError("invalid PID '" + *pid_text + "'");
    }
    prototype.pid = static_cast<int64_t>(*pid);
  }
  prototype.image = image;
  if (image && image->find('/') != std::string::npos && image->front() != '/') {
    // A relative path to an ELF file: the daemon runs elsewhere.
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(*image, ec);
    if (!ec && std::filesystem::exists(absolute, ec)) {
      prototype.image = absolute.string();
    } else {
      // The daemon takes absolute paths only; this one names nothing here.
      return parser.UsageError("--image '" + *image + "': no such file");
    }
  }
  // A file is opened here, with this user's rights, and every request names its descriptor: the
  // daemon reads that file and opens no path it was given. One that cannot be opened is named
  // by path only (the daemon then says why it is not read).
  ImageFiles image_files;
  image_files.Attach(&prototype);
  prototype.build_id = build_id;
  prototype.file_offset = file_offset;
  if (!prototype.pid && !prototype.image && !prototype.build_id) {
    return parser.UsageError("--pid, --image or --build-id is required");
  }
  if (time_text) {
    prototype.time = proto::ParseTime(*time_text);
    if (!prototype.time) {
      return parser.UsageError("invalid --time '" + *time_text +
                               "' (nanoseconds, or seconds with a decimal point)");
    }
  }
  // Times matter only for a process's code; --image and --build-id answers have none.
  TimeChecker times("lookup");
  if (prototype.time && prototype.pid) times.Check(*prototype.time, *time_text);
  prototype.origin = origin;
  if (!json) {
    // Text output prints only these: ask for nothing else.
    prototype.fields =
        proto::kFieldName | proto::kFieldOffset | proto::kFieldOrigin | proto::kFieldPosition;
    if (inlines) prototype.fields |= proto::kFieldFrames;
  }
  prototype.strings = true;  // batches repeat names and paths: send each once
  // Decoding binary answers is a fraction of decoding JSON (docs/performance.md, Native).
  prototype.binary = !wire || *wire == "binary";
  // Batches of one run repeat the same names: each is sent once per connection, not per batch.
  prototype.connection_strings = prototype.binary;
  size_t batch_size = kDefaultBatch;
  if (batch_text) {
    const std::optional<uint64_t> n = proto::ParseDecimal(*batch_text);
    if (!n || *n == 0 || *n > proto::kMaxBatch) {
      return parser.UsageError("invalid --batch '" + *batch_text + "' (1.." +
                               std::to_string(proto::kMaxBatch) + ")");
    }
    batch_size = *n;
  }

  auto connection = ConnectOrReport(globals);
  if (!connection) return kExitError;
  std::unique_ptr<AddressSource> source;
  if (addrs.empty()) {
    source = std::make_unique<StdinSource>();
  } else {
    source = std::make_unique<ArgsSource>(addrs);
  }
  // A second connection only once the daemon has taken it (a ping answered): one over the
  // daemon's per-user connection limit is answered "busy" and closed, and would fail the batches
  // sent on it. Without it, the first connection serves every batch.
  // The same daemon as the first connection: the path that one reached.
  auto connect_more = [&globals,
                       path = connection->path()]() -> std::unique_ptr<proto::ClientConnection> {
    std::string ignored;
    auto more = proto::ClientConnection::Connect(path, &ignored, globals.timeout_ms);
    if (more == nullptr) return nullptr;
    proto::Request ping;
    ping.body = proto::PingRequest{};
    const std::optional<proto::Response> pong = more->Call(ping, &ignored);
    if (!pong || !std::holds_alternative<proto::PingResponse>(pong->body)) return nullptr;
    return more;
  };
  LookupPipeline pipeline(*connection, connect_more, *source, prototype, batch_size, json, inlines,
                          prototype.pid ? &times : nullptr);
  return pipeline.Run();
}

}  // namespace jitsym::client
