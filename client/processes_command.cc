#include <cstdio>
#include <string>

#include "client/args.h"
#include "client/command.h"
#include "client/daemon_call.h"
#include "client/output.h"
#include "proto/json_writer.h"

namespace jitsym::client {
namespace {

void AppendPadded(std::string_view text, size_t width, std::string* out) {
  out->append(text);
  out->append(text.size() < width ? width - text.size() : 1, ' ');
}

// One row of the table.
void AppendRow(const proto::ProcessInfo& p, std::string* out) {
  AppendPadded(std::to_string(p.pid), 9, out);
  AppendPadded(p.nspid ? std::to_string(*p.nspid) : "-", 9, out);
  AppendPadded(std::to_string(p.incarnation), 13, out);
  AppendPadded(p.alive ? "alive" : "exited", 8, out);
  AppendPadded(std::to_string(p.ranges), 10, out);
  AppendPadded(p.cgroup && !p.cgroup->empty() ? *p.cgroup : "-", 8, out);
  bool first = true;
  for (const proto::SourceInfo& s : p.sources) {
    if (!first) out->append(", ");
    first = false;
    out->append(proto::OriginName(s.origin)).append(":").append(s.path).append(" (");
    out->append(proto::SourceStateName(s.state));
    if (!s.error.empty()) out->append(": ").append(s.error);
    out->append(")");
  }
  out->push_back('\n');
}

}  // namespace

int RunProcesses(const GlobalOptions& globals, const std::vector<std::string>& args) {
  bool json = false;
  ArgParser parser("processes",
                   "usage: jitsym processes [--json]\n"
                   "\n"
                   "Lists the processes jitsymd has code ranges for, with their sources.\n"
                   "\n"
                   "  --json   one JSON object per process per line, as on the wire; files\n"
                   "           left unattached (writer unknown) as {\"unattached\":{...}} lines\n");
  parser.AddFlag("--json", &json);
  std::vector<std::string> positional;
  if (auto status = parser.Parse(args, &positional)) return *status;
  if (!positional.empty()) return parser.UsageError("unexpected argument " + positional[0]);

  // Each process is printed as it arrives: the list is never held whole.
  Output output;
  std::string& out = output.buffer();
  bool header = json;  // the table's, written before its first row
  const auto table_header = [&] {
    if (!header) out.append("PID      NSPID    INCARNATION  STATE   RANGES    CGROUP  SOURCES\n");
    header = true;
  };
  proto::ProcessInfo p;
  const auto print = [&](std::string_view element) -> Status {
    if (Status st = proto::DecodeProcessInfo(element, &p); !st.ok()) {
      return MakeError(ErrorKind::kMalformed,
                       "malformed response from jitsymd: " + st.error().message);
    }
    if (json) {
      proto::EncodeProcessInfo(p, &out);
      out.push_back('\n');
    } else {
      table_header();
      AppendRow(p, &out);
    }
    output.MaybeFlush();
    return OkStatus();
  };
  std::optional<proto::Response> response =
      CallArrayAnswerOrReport(globals, {"", proto::ProcessesRequest{}}, "processes", print);
  if (!response) return kExitError;
  const auto* processes = std::get_if<proto::ProcessesResponse>(&response->body);
  if (processes == nullptr) {
    std::fprintf(stderr, "jitsym: jitsymd answered processes with something else\n");
    return kExitError;
  }
  if (json) {
    for (const proto::UnattachedInfo& u : processes->unattached) {
      out.append("{\"unattached\":{\"path\":");
      proto::json::AppendString(u.path, &out);
      out.append(",\"uid\":").append(std::to_string(u.uid)).append(",\"reason\":");
      proto::json::AppendString(u.reason, &out);
      out.append("}}\n");
    }
    return output.Flush() ? kExitOk : kExitError;
  }
  table_header();
  for (const proto::UnattachedInfo& u : processes->unattached) {
    out.append("unattached: ").append(u.path).append(" (owner uid ");
    out.append(std::to_string(u.uid)).append("): ").append(u.reason).push_back('\n');
  }
  return output.Flush() ? kExitOk : kExitError;
}

}  // namespace jitsym::client
