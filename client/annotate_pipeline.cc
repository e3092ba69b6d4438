// The annotate pipeline (see annotate_pipeline.h). Lines are read in batches; a writer thread
// parses a batch, sends one lookup request per pid in it, and queues it; the calling thread
// reads the answers and writes the batch out (or hands its samples to a sink). A fixed pool of
// batches bounds memory whatever the input size.
//
// Inputs are checked where they enter: with -i it runs `perf script` itself, after checking the
// recording's clock as `perf inject --jit` does; it warns once when the samples have no time or
// no pid/tid, or times that look like another clock; and it ends with a summary of what was
// named and what was not, and why (on stderr; --quiet silences warnings and summary).
#include "client/annotate_pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "client/args.h"
#include "client/blocking_queue.h"
#include "client/command.h"
#include "client/daemon_call.h"
#include "client/frame_summary.h"
#include "client/image_files.h"
#include "client/line_reader.h"
#include "client/output.h"
#include "client/perf_recording.h"
#include "client/perf_script_parser.h"
#include "client/pipeline.h"
#include "client/subprocess.h"
#include "client/time_check.h"
#include "proto/client_connection.h"
#include "proto/protocol.h"

namespace jitsym::client {
namespace {

constexpr size_t kBatchesInFlight = 4;
constexpr size_t kMaxBatchText = 1 << 20;  // input bytes per batch
constexpr size_t kMaxBatchLines = 1 << 16;

// One input line of a batch.
struct LineRec {
  uint32_t begin = 0;  // into Batch::text; the line ends before the next one's begin
  uint32_t len = 0;
  int32_t query = -1;  // index into Batch::queries, -1: nothing asked
  PerfScriptLine kind = PerfScriptLine::kOther;
  // Relative to the line: the symbol and dso perf printed, [repl_begin, repl_end), replaced by
  // an answer; when they are empty, the answer is inserted after the ip (ip_end).
  uint32_t repl_begin = 0, repl_end = 0, ip_end = 0;
  // For --folded: the symbol as printed, and the comm of a sample line.
  uint32_t sym_begin = 0, sym_len = 0;
  uint32_t comm_begin = 0, comm_len = 0;
  // For a sink: the frame's ip and dso, and a sample line's pid and tid.
  uint32_t dso_begin = 0, dso_len = 0;
  uint64_t ip = 0;
  int64_t pid = -1, tid = -1;
  bool has_frame = false;
  bool no_pid = false;  // needed a name, but the input gave no pid or tid to ask with
};

// Who answers a query: a pid, or an image (path) with file offsets or ELF addresses.
struct Target {
  int64_t pid = 0;
  std::string image;
  bool file_offset = false;
  bool operator==(const Target& o) const {
    return pid == o.pid && file_offset == o.file_offset && image == o.image;
  }
};

struct Batch {
  std::string text;
  std::vector<LineRec> lines;
  std::vector<Target> targets;           // one request per target, in this order
  std::vector<proto::Request> requests;  // parallel to targets (reused storage)
  size_t used_requests = 0;
  size_t last_target = 0;
  std::vector<std::pair<uint32_t, uint32_t>> queries;  // (request, index in its addrs)
  std::vector<proto::Response> responses;
  // Per target, for images: address -> its query. An answer without a time is the same answer
  // each time (a -g profile repeats the same native frames in most of its samples), so an
  // address is asked about once per batch.
  std::vector<std::unordered_map<uint64_t, int32_t>> asked;

  void Clear() {
    text.clear();
    lines.clear();
    for (size_t i = 0; i < targets.size() && i < asked.size(); ++i) asked[i].clear();
    targets.clear();
    for (size_t i = 0; i < used_requests; ++i) {
      std::get<proto::LookupRequest>(requests[i].body).addrs.clear();
    }
    used_requests = 0;
    queries.clear();
  }
};

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

// NAME+0xOFF (ORIGIN:IMAGE)
void AppendAnswer(const proto::LookupResult& r, std::string* out) {
  AppendClean(r.name, out);
  out->push_back('+');
  AppendHex(r.offset, out);
  out->append(" (");
  AppendClean(proto::OriginName(r.origin), out);
  out->push_back(':');
  AppendClean(!r.image.empty() ? r.image : r.source, out);
  out->push_back(')');
}

// What follows the clock problem of a recording, in the warning.
constexpr char kClockAdvice[] =
    "`perf inject --jit` refuses such a recording, and its sample times are not on the clock of "
    "jitdump files, so frames in code ranges that were reused may get wrong names. Record with "
    "`perf record -k mono`.";

class AnnotatePipeline {
 public:
  AnnotatePipeline(proto::ClientConnection& connection, const AnnotateOptions& options,
                   StackSink* sink, int input_fd)
      : connection_(connection),
        options_(options),
        sink_(sink),
        reader_(input_fd, options.input ? std::string_view() : options.stdin_prefix),
        times_(options.command) {
    times_.set_quiet(options.quiet);
    for (auto& batch : batches_) {
      batch.text.reserve(kMaxBatchText + LineReader::kMaxLineBytes + 1);
      free_.Push(&batch);
    }
  }

  int Run() {
    return RunPipeline([this] { WriterLoop(); }, [this](std::string* e) { return ReaderLoop(e); },
                       [this] {
                         free_.Close();
                         connection_.Shutdown();
                         reader_.Wake();
                       },
                       &writer_error_);
  }

 private:
  // ---- writer side: parse lines, build requests ----

  void Ask(Batch* batch, LineRec* rec, const Target& target, uint64_t addr,
           std::optional<uint64_t> time) {
    // Consecutive frames mostly share their target (one sample's stack): try the last one first.
    size_t t = batch->last_target;
    if (t >= batch->targets.size() || !(batch->targets[t] == target)) {
      t = 0;
      while (t < batch->targets.size() && !(batch->targets[t] == target)) ++t;
    }
    batch->last_target = t;
    if (t == batch->targets.size()) {
      batch->targets.push_back(target);
      if (batch->requests.size() < batch->targets.size()) batch->requests.emplace_back();
      proto::Request& req = batch->requests[t];
      proto::LookupRequest lookup;
      if (target.image.empty()) {
        lookup.pid = target.pid;
      } else {
        lookup.image = target.image;
        lookup.file_offset = target.file_offset;
        images_.Attach(&lookup);
      }
      lookup.fields = proto::kFieldName | proto::kFieldOffset | proto::kFieldOrigin |
                      proto::kFieldSource | proto::kFieldImage |
                      (sink_ != nullptr ? sink_->extra_fields() : 0);
      lookup.strings = true;  // a profile names the same functions over and over
      if (auto* old = std::get_if<proto::LookupRequest>(&req.body)) {
        lookup.addrs = std::move(old->addrs);  // keep its capacity
        lookup.addrs.clear();
      }
      req.body = std::move(lookup);
      batch->used_requests = batch->targets.size();
    }
    if (!time) {
      if (batch->asked.size() <= t) batch->asked.resize(t + 1);
      auto [it, fresh] =
          batch->asked[t].try_emplace(addr, static_cast<int32_t>(batch->queries.size()));
      if (!fresh) {
        rec->query = it->second;
        return;
      }
    }
    auto& addrs = std::get<proto::LookupRequest>(batch->requests[t].body).addrs;
    proto::AddressQuery& q = addrs.emplace_back();
    q.addr = addr;
    q.time = time;
    rec->query = static_cast<int32_t>(batch->queries.size());
    batch->queries.emplace_back(static_cast<uint32_t>(t), static_cast<uint32_t>(addrs.size() - 1));
  }

  // Decides whether a frame is asked about, and records where its answer goes.
  void AddFrame(Batch* batch, LineRec* rec, const PerfScriptFrame& f) {
    rec->has_frame = true;
    rec->ip_end = static_cast<uint32_t>(f.ip_end);
    rec->repl_begin = static_cast<uint32_t>(f.sym_begin);
    rec->repl_end = static_cast<uint32_t>(f.tail_begin);
    const char* line = batch->text.data() + rec->begin;
    rec->sym_begin = f.sym.empty() ? 0 : static_cast<uint32_t>(f.sym.data() - line);
    rec->sym_len = static_cast<uint32_t>(f.sym.size());
    rec->ip = f.ip;
    if (f.has_dso && !f.dso.empty()) {
      rec->dso_begin = static_cast<uint32_t>(f.dso.data() - line);
      rec->dso_len = static_cast<uint32_t>(f.dso.size());
    }
    if (pid_ == 0) return;  // the idle task: kernel code
    if (pid_ < 0) {
      // No pid field (or a sample line that could not be read): nobody to ask. Frames perf
      // could not name stay unnamed; counted, and said once.
      if (NeedsJitName(f)) {
        rec->no_pid = true;
        Warn(&warned_no_pid_,
             "warning: the input has no pid or tid field: no frame can be named (jitsymd is "
             "asked by process); add pid or tid to `perf script -F`, or use `jitsym annotate "
             "-i perf.data`");
      }
      return;
    }
    if (!time_ && NeedsJitName(f)) {
      Warn(&warned_no_time_,
           "warning: the input has no time field: frames are named after the latest code at "
           "their address, so frames in code ranges that were reused may get wrong names; add "
           "time to `perf script -F` (and record with `perf record -k mono`)");
    }
    if (NeedsJitName(f)) {
      // perf names the process in the dso of an anonymous mapping (/tmp/perf-<pid>.map) even
      // when the sample line shows a thread id.
      const int64_t pid = f.has_dso ? PidOfJitDso(f.dso).value_or(pid_) : pid_;
      Ask(batch, rec, Target{pid, {}, false}, f.ip, time_);
    } else if (options_.native && f.has_dso && !f.dso.empty() && f.dso[0] == '/') {
      // perf prints callchain entries as offsets in their file (dso offsets), and the ip of a
      // sample line as the absolute address.
      if (rec->kind == PerfScriptLine::kFrame) {
        Ask(batch, rec, Target{0, std::string(f.dso), true}, f.ip, std::nullopt);
      } else {
        Ask(batch, rec, Target{pid_, {}, false}, f.ip, time_);
      }
    }
  }

  void AddLine(std::string_view line, Batch* batch) {
    LineRec& rec = batch->lines.emplace_back();
    rec.begin = static_cast<uint32_t>(batch->text.size());
    rec.len = static_cast<uint32_t>(line.size());
    batch->text.append(line);
    batch->text.push_back('\n');
    const std::string_view stored(batch->text.data() + rec.begin, line.size());
    PerfScriptSample sample;
    PerfScriptFrame frame;
    rec.kind = ParsePerfScriptLine(stored, &sample, &frame);
    if (!warned_clock_ && rec.kind == PerfScriptLine::kOther) {
      // `perf script --header` output: the recording's events, checked as with -i.
      if (auto event = ParsePerfHeaderEvent(stored)) {
        if (auto problem = InjectClockProblem({*event})) {
          warned_clock_ = true;
          if (!options_.quiet) {
            std::fprintf(stderr, "jitsym %s: warning: %s. %s\n", options_.command, problem->c_str(),
                         kClockAdvice);
          }
        }
      }
    }
    if (rec.kind == PerfScriptLine::kBlank ||
        (rec.kind == PerfScriptLine::kOther && !line.empty() && line[0] != '\t')) {
      // The end of a sample, or a sample line this parser could not read (-F without pid and
      // time, "-F ip" prints an empty one): the frames that follow are not the last sample's.
      pid_ = -1;
      time_.reset();
    }
    if (rec.kind == PerfScriptLine::kSample) {
      // The pid, or a lone thread id (perf's default fields): jitsymd tells which process a
      // thread id belonged to at the sample's time, which /proc here cannot once it exited or
      // the id was reused.
      pid_ = sample.pid;
      time_ = sample.time_ns;
      rec.pid = sample.pid;
      rec.tid = sample.tid;
      if (time_ && pid_ > 0 && times_.WouldWarn(*time_)) {  // formats only then: per sample
        char shown[48];
        std::snprintf(shown, sizeof(shown), "%llu.%06llu",
                      static_cast<unsigned long long>(*time_ / 1000000000ull),
                      static_cast<unsigned long long>(*time_ % 1000000000ull / 1000));
        times_.Check(*time_, shown);
      }
      if (!sample.comm.empty()) {
        rec.comm_begin = static_cast<uint32_t>(sample.comm.data() - stored.data());
        rec.comm_len = static_cast<uint32_t>(sample.comm.size());
      }
      if (sample.frame) AddFrame(batch, &rec, *sample.frame);
    } else if (rec.kind == PerfScriptLine::kFrame) {
      AddFrame(batch, &rec, frame);
    }
  }

  bool Fill(Batch* batch) {
    std::string_view line;
    BatchWindow window;
    while (batch->queries.size() < options_.batch_size && batch->text.size() < kMaxBatchText &&
           batch->lines.size() < kMaxBatchLines) {
      if (!batch->lines.empty() && !window.TakesMore(reader_, batch->lines.size())) return true;
      if (!reader_.Next(&line)) return false;
      if (batch->lines.empty()) window.Open();
      AddLine(line, batch);
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
      if (!more && !reader_.error().empty()) writer_error_ = reader_.error();
      if (batch->lines.empty()) break;
      encoded.clear();
      for (size_t i = 0; i < batch->targets.size(); ++i) {
        proto::EncodeRequest(batch->requests[i], &encoded);
      }
      in_flight_.Push(batch);
      std::string error;
      if (!encoded.empty() && !connection_.Send(encoded, &error)) {
        if (writer_error_.empty()) writer_error_ = error;
        connection_.Shutdown();
        break;
      }
      if (!more) break;
    }
    in_flight_.Close();
  }

  // Says `text` once (the flag) unless --quiet. Writer thread.
  void Warn(bool* said, const char* text) {
    if (*said) return;
    *said = true;
    if (!options_.quiet) std::fprintf(stderr, "jitsym %s: %s\n", options_.command, text);
  }

  // ---- reader side: answers in, lines out ----

  // The result for a line's frame, found or not; null when nothing was asked or the request
  // was refused.
  const proto::LookupResult* Result(const Batch& batch, const LineRec& rec) {
    if (rec.query < 0) return nullptr;
    const auto [req, idx] = batch.queries[static_cast<size_t>(rec.query)];
    const auto* lookup = std::get_if<proto::LookupResponse>(&batch.responses[req].body);
    if (lookup == nullptr || idx >= lookup->results.size()) return nullptr;
    return &lookup->results[idx];
  }

  const proto::LookupResult* Answer(const Batch& batch, const LineRec& rec) {
    const proto::LookupResult* r = Result(batch, rec);
    return r != nullptr && r->found ? r : nullptr;
  }

  // Counts a batch's frames for the summary: named per origin, unknown per reason.
  void Tally(const Batch& batch) {
    for (const LineRec& rec : batch.lines) {
      if (rec.no_pid) {
        summary_.Unknown(std::string(kNoPidKey));
        continue;
      }
      if (rec.query < 0) continue;
      if (const proto::LookupResult* r = Result(batch, rec)) {
        if (r->found) {
          summary_.Named(*r);
        } else {
          summary_.Unknown(*r);
        }
        continue;
      }
      // The request was refused as a whole: the error's code is the reason.
      const auto req = batch.queries[static_cast<size_t>(rec.query)].first;
      const auto* err = std::get_if<proto::ErrorResponse>(&batch.responses[req].body);
      summary_.Unknown(err != nullptr ? err->code : std::string("unknown"));
    }
  }

  void PrintSummary() const {
    std::fputs(summary_.Format(options_.command, "frames").c_str(), stderr);
  }

  void WriteLines(const Batch& batch, std::string* out) {
    for (const LineRec& rec : batch.lines) {
      const char* line = batch.text.data() + rec.begin;
      const proto::LookupResult* r = Answer(batch, rec);
      if (r == nullptr) {
        out->append(line, rec.len + 1);  // with its newline
        continue;
      }
      if (rec.repl_begin == rec.repl_end) {  // nothing after the ip: insert
        out->append(line, rec.ip_end);
        out->push_back(' ');
        AppendAnswer(*r, out);
        out->append(line + rec.ip_end, rec.len + 1 - rec.ip_end);
      } else {
        out->append(line, rec.repl_begin);
        AppendAnswer(*r, out);
        out->append(line + rec.repl_end, rec.len + 1 - rec.repl_end);
      }
    }
  }

  void SinkFrame(const Batch& batch, const LineRec& rec) {
    const char* line = batch.text.data() + rec.begin;
    StackFrame frame;
    frame.answer = Answer(batch, rec);
    frame.name = frame.answer != nullptr
                     ? frame.answer->name
                     : StripSymbolOffset(std::string_view(line + rec.sym_begin, rec.sym_len));
    frame.ip = rec.ip;
    if (rec.dso_len != 0) frame.dso = std::string_view(line + rec.dso_begin, rec.dso_len);
    sink_->AddFrame(frame);
  }

  void SinkLines(const Batch& batch) {
    for (const LineRec& rec : batch.lines) {
      const char* line = batch.text.data() + rec.begin;
      if (rec.kind == PerfScriptLine::kSample) {
        if (in_sample_) sink_->EndSample();
        in_sample_ = true;
        sink_->BeginSample(std::string_view(line + rec.comm_begin, rec.comm_len), rec.pid, rec.tid);
        if (rec.has_frame) SinkFrame(batch, rec);
      } else if (rec.kind == PerfScriptLine::kFrame && in_sample_) {
        SinkFrame(batch, rec);
      } else if (rec.kind == PerfScriptLine::kBlank && in_sample_) {
        in_sample_ = false;
        sink_->EndSample();
      }
    }
  }

  int ReaderLoop(std::string* error) {
    Output output;
    for (;;) {
      if (in_flight_.Empty()) output.Flush();  // waiting: show what we have (interactive use)
      std::optional<Batch*> next = in_flight_.Pop();
      if (!next) break;
      Batch* batch = *next;
      batch->responses.resize(std::max(batch->responses.size(), batch->targets.size()));
      for (size_t i = 0; i < batch->targets.size(); ++i) {
        proto::Response& response = batch->responses[i];
        if (!connection_.ReadResponse(&response, error)) {
          output.Flush();
          return kExitError;
        }
        const auto& asked = std::get<proto::LookupRequest>(batch->requests[i].body).addrs;
        if (const auto* err = std::get_if<proto::ErrorResponse>(&response.body)) {
          // One pid we may not ask about, an image the daemon does not know: the frames stay
          // as perf printed them; say so once per kind of error.
          if (reported_.insert(err->code).second) ReportErrorResponse(*err);
        } else if (const auto* lookup = std::get_if<proto::LookupResponse>(&response.body);
                   lookup == nullptr || lookup->results.size() != asked.size()) {
          output.Flush();
          *error = "jitsymd answered " + std::to_string(asked.size()) + " addresses with " +
                   std::to_string(lookup == nullptr ? 0 : lookup->results.size()) + " results";
          return kExitError;
        }
      }
      Tally(*batch);
      if (sink_ != nullptr) {
        SinkLines(*batch);
      } else {
        WriteLines(*batch, &output.buffer());
      }
      batch->Clear();
      free_.Push(batch);
      output.MaybeFlush();
    }
    if (sink_ != nullptr && in_sample_) {
      in_sample_ = false;
      sink_->EndSample();
    }
    if (!output.Flush()) {
      *error = "cannot write output";
      return kExitError;
    }
    if (!options_.quiet) PrintSummary();
    return kExitOk;
  }

  proto::ClientConnection& connection_;
  ImageFiles images_;  // the files image lookups name, opened here (the writer's only)
  const AnnotateOptions options_;
  StackSink* const sink_;  // null: the text goes back out, annotated
  LineReader reader_;
  Batch batches_[kBatchesInFlight];
  BlockingQueue<Batch*> free_;
  BlockingQueue<Batch*> in_flight_;
  std::string writer_error_;
  // Writer state: the current sample's pid and time (frames follow their sample line).
  int64_t pid_ = -1;
  std::optional<uint64_t> time_;
  TimeChecker times_;
  bool warned_no_pid_ = false, warned_no_time_ = false, warned_clock_ = false;
  // Reader state.
  std::set<std::string> reported_;
  bool in_sample_ = false;
  FrameSummary summary_;
};

// The fields `perf script` is asked for with -i: what the parser needs to name a frame (ip,
// sym, dso decide which frames need a name; pid and tid whom to ask; time when), and comm for
// --folded. Callchains come with ip when the recording has them.
constexpr char kPerfScriptFields[] = "comm,pid,tid,time,ip,sym,dso";

// With -i: reads the recording's event attributes, warns where `perf inject --jit` would refuse
// its clock, and starts `perf script` on it. False after reporting an error.
bool StartPerfScript(const AnnotateOptions& options, Child* child) {
  const std::string& input = *options.input;
  const char* command = options.command;
  std::string evlist, error;
  bool not_found = false;
  const int status = RunCapture({"perf", "evlist", "-v", "-i", input}, &evlist, &error, &not_found);
  if (not_found) {
    std::fprintf(stderr,
                 "jitsym %s: perf is not installed or not on PATH; -i needs it to read "
                 "%s (Debian: apt install linux-perf)\n",
                 command, input.c_str());
    return false;
  }
  if (status != 0) {
    std::fprintf(stderr, "jitsym %s: `perf evlist -v -i %s` failed (%s)\n", command, input.c_str(),
                 status < 0 ? error.c_str() : ("exit status " + std::to_string(status)).c_str());
    return false;
  }
  const std::vector<PerfEventAttrs> events = ParsePerfEvlist(evlist);
  if (auto problem = InjectClockProblem(events); problem && !options.quiet) {
    std::fprintf(stderr, "jitsym %s: warning: %s: %s. %s\n", command, input.c_str(),
                 problem->c_str(), kClockAdvice);
  }
  // perf script refuses to print a field the samples do not have.
  bool all_timed = !events.empty();
  for (const PerfEventAttrs& e : events) all_timed = all_timed && e.time;
  std::string fields = kPerfScriptFields;
  if (!all_timed) fields = "comm,pid,tid,ip,sym,dso";
  std::vector<std::string> argv = {"perf", "script", "-i", input, "-F", fields};
  argv.insert(argv.end(), options.perf_args.begin(), options.perf_args.end());
  if (!SpawnPiped(argv, child, &error, &not_found)) {
    std::fprintf(stderr, "jitsym %s: cannot run perf script: %s\n", command, error.c_str());
    return false;
  }
  return true;
}

}  // namespace

const char kPerfScriptInputHelp[] =
    "Frames perf could not name ([unknown], //anon, /memfd:..., perf-<pid>.map,\n"
    "jit-<pid>.dump) are named by jitsymd, asked by pid and sample time. Record with\n"
    "`perf record -k mono` so that sample times are CLOCK_MONOTONIC, the clock of jitdump\n"
    "files; without a time field the latest code at an address answers. The perf script\n"
    "fields must include pid or tid (perf's default fields print the thread id; jitsymd\n"
    "knows which process each thread belonged to, also after it exited) and ip.\n"
    "Lines longer than 64 KiB are cut.\n"
    "\n"
    "With -i, runs `perf script -i FILE -F comm,pid,tid,time,ip,sym,dso` itself (callchains\n"
    "are printed when recorded; PERF-SCRIPT-OPTIONS after `--` are added), after reading the\n"
    "recording's event attributes (`perf evlist -v`) and warning when it was not recorded\n"
    "with `perf record -k mono` (perf inject --jit refuses such recordings).\n"
    "\n"
    "Warnings (once each, on stderr): input without a time field (frames in reused code\n"
    "ranges may get wrong names), without pid or tid (nothing can be named), times that\n"
    "look like microseconds or a wall-clock epoch. At the end, a summary on stderr: frames\n"
    "named per origin, frames left unknown per reason.\n";

std::optional<int> ParseAnnotateArgs(ArgParser& parser, const std::vector<std::string>& args,
                                     AnnotateOptions* options) {
  std::optional<std::string> batch_text;
  parser.AddFlag("--native", &options->native);
  parser.AddFlag("--quiet", &options->quiet);
  parser.AddValue("-i", &options->input);
  parser.AddValue("--input", &options->input);
  parser.AddValue("--batch", &batch_text);
  // Everything after `--` is perf script's.
  const auto dashes = std::find(args.begin(), args.end(), "--");
  const std::vector<std::string> own(args.begin(), dashes);
  options->perf_args.assign(dashes == args.end() ? dashes : dashes + 1, args.end());
  std::vector<std::string> positional;
  if (auto status = parser.Parse(own, &positional)) return status;
  if (!positional.empty()) {
    return parser.UsageError("unexpected argument '" + positional[0] +
                             "' (input is stdin, or -i FILE)");
  }
  if (dashes != args.end() && !options->input) {
    return parser.UsageError("options after -- are for perf script, which runs only with -i");
  }
  if (options->input && options->input->empty()) return parser.UsageError("-i needs a file name");
  if (batch_text) {
    const std::optional<uint64_t> n = proto::ParseDecimal(*batch_text);
    if (!n || *n == 0 || *n > proto::kMaxBatch) {
      return parser.UsageError("invalid --batch '" + *batch_text + "'");
    }
    options->batch_size = *n;
  }
  return std::nullopt;
}

int RunAnnotatePipeline(const GlobalOptions& globals, const AnnotateOptions& options,
                        StackSink* sink) {
  auto connection = ConnectOrReport(globals);
  if (!connection) return kExitError;
  if (!options.input) {
    AnnotatePipeline pipeline(*connection, options, sink, STDIN_FILENO);
    return pipeline.Run();
  }
  Child perf;
  if (!StartPerfScript(options, &perf)) return kExitError;
  int status;
  {
    AnnotatePipeline pipeline(*connection, options, sink, perf.stdout_fd);
    status = pipeline.Run();
  }
  close(perf.stdout_fd);  // a perf still writing (we stopped early) gets EPIPE and ends
  const int perf_status = WaitChild(perf.pid);
  if (perf_status != 0 && status == kExitOk) {
    std::fprintf(stderr, "jitsym %s: perf script failed (exit status %d)\n", options.command,
                 perf_status);
    return kExitError;
  }
  return status;
}

}  // namespace jitsym::client
