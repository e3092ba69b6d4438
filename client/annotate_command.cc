// jitsym annotate: a filter for `perf script` output that fills in the names of JIT frames.
//
// Every line passes through byte for byte, except that a frame perf could not name (or named
// from a JIT side file) gets `NAME+0xOFF (ORIGIN:IMAGE)` in place of its symbol and dso, asked
// of jitsymd by pid and sample time (annotate_pipeline.h). With --folded the output is
// collapsed stacks instead (comm;outer;...;leaf COUNT), with --pprof a profile.proto.
#include <optional>
#include <string>
#include <vector>

#include "client/annotate_pipeline.h"
#include "client/args.h"
#include "client/command.h"
#include "client/output.h"
#include "client/pprof_sink.h"
#include "client/stack_sink.h"

namespace jitsym::client {
namespace {

std::string Usage() {
  return std::string(
             "usage: perf script [OPTIONS] | jitsym annotate [--folded | --pprof OUT [--label "
             "K=V]]\n"
             "                                              [--native] [--batch N] [--quiet]\n"
             "       jitsym annotate -i perf.data [OPTIONS] [-- PERF-SCRIPT-OPTIONS]\n"
             "\n"
             "Reads `perf script` output on stdin and writes it to stdout unchanged, except\n"
             "that frames are named as `NAME+0xOFF (ORIGIN:IMAGE)`.\n") +
         kPerfScriptInputHelp +
         "\n"
         "  -i FILE     read this perf.data through `perf script`\n"
         "  --quiet     no warnings and no summary (errors are still reported)\n"
         "  --folded    print collapsed stacks (comm;outer;...;leaf COUNT) for flame graph tools\n"
         "  --pprof OUT write a gzip'd pprof profile.proto instead (`-`: stdout): JIT frames\n"
         "              named (with source file and line where the JIT gave them), native\n"
         "              frames with their inlined functions, labels pid, tid and comm per\n"
         "              sample: go tool pprof -top OUT. Native frames are asked of jitsymd\n"
         "              too (--native): their inlined functions, lines and build ids\n"
         "  --label K=V with --pprof: a label on every sample (host=..., service=...); may be\n"
         "              repeated\n"
         "  --native    also ask jitsymd about frames perf named in files (ELF images), and use\n"
         "              its names where it has them: callchain entries (which perf prints as\n"
         "              offsets in their file) by file, a sample line's ip by pid\n"
         "  --batch N   frames per request (default 8192; fewer when the input pauses, 10 ms\n"
         "              after a request's first line at the latest)\n";
}

}  // namespace

int RunAnnotate(const GlobalOptions& globals, const std::vector<std::string>& args) {
  AnnotateOptions options;
  bool folded = false;
  std::optional<std::string> pprof_out;
  std::vector<std::string> label_texts;
  ArgParser parser("annotate", Usage());
  parser.AddFlag("--folded", &folded);
  parser.AddValue("--pprof", &pprof_out);
  parser.AddList("--label", &label_texts);
  if (auto status = ParseAnnotateArgs(parser, args, &options)) return *status;
  if (folded && pprof_out) return parser.UsageError("--folded and --pprof exclude each other");
  std::vector<std::pair<std::string, std::string>> labels;
  for (const std::string& t : label_texts) {
    std::string error;
    if (!ParseLabel(t, &labels.emplace_back(), &error)) return parser.UsageError(error);
  }
  if (!labels.empty() && !pprof_out) return parser.UsageError("--label goes with --pprof");
  if (pprof_out) {
    // A profile that leaves the host should carry what only this host can tell about native
    // frames too: their inlined functions, source lines and the image's build id.
    options.native = true;
    PprofSink sink(labels, {options.input ? "jitsym annotate -i " + *options.input
                                          : std::string("jitsym annotate")});
    const int status = RunAnnotatePipeline(globals, options, &sink);
    if (status != kExitOk) return status;
    return WriteProfileFile(sink.Take(), *pprof_out) ? kExitOk : kExitError;
  }
  if (!folded) return RunAnnotatePipeline(globals, options, nullptr);
  FoldedSink sink;
  const int status = RunAnnotatePipeline(globals, options, &sink);
  if (status != kExitOk && status != kExitUnknownProcess && status != kExitDenied) return status;
  Output output;
  sink.Write(&output.buffer(), [&] { output.MaybeFlush(); });
  if (!output.Flush()) {
    std::fprintf(stderr, "jitsym: cannot write output\n");
    return kExitError;
  }
  return status;
}

}  // namespace jitsym::client
