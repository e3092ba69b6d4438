// jitsym annotate: a filter for `perf script` output that fills in the names of JIT frames.
//
// Every line passes through byte for byte, except that a frame perf could not name (or named
// from a JIT side file) gets `NAME+0xOFF (ORIGIN:IMAGE)` in place of its symbol and dso, asked
// of jitsymd by pid and sample time (annotate_pipeline.h). With --folded the output is
// collapsed stacks instead (comm;outer;...;leaf COUNT).
#include <string>
#include <vector>

#include "client/annotate_pipeline.h"
#include "client/args.h"
#include "client/command.h"
#include "client/output.h"
#include "client/stack_sink.h"

namespace jitsym::client {
namespace {

std::string Usage() {
  return std::string(
             "usage: perf script [OPTIONS] | jitsym annotate [--folded] [--native] [--batch N]\n"
             "                                              [--quiet]\n"
             "       jitsym annotate -i perf.data [OPTIONS] [-- PERF-SCRIPT-OPTIONS]\n"
             "\n"
             "Reads `perf script` output on stdin and writes it to stdout unchanged, except\n"
             "that frames are named as `NAME+0xOFF (ORIGIN:IMAGE)`.\n") +
         kPerfScriptInputHelp +
         "\n"
         "  -i FILE     read this perf.data through `perf script`\n"
         "  --quiet     no warnings and no summary (errors are still reported)\n"
         "  --folded    print collapsed stacks (comm;outer;...;leaf COUNT) for flame graph tools\n"
         "  --native    also ask jitsymd about frames perf named in files (ELF images), and use\n"
         "              its names where it has them: callchain entries (which perf prints as\n"
         "              offsets in their file) by file, a sample line's ip by pid\n"
         "  --batch N   frames per request (default 8192)\n";
}

}  // namespace

int RunAnnotate(const GlobalOptions& globals, const std::vector<std::string>& args) {
  AnnotateOptions options;
  bool folded = false;
  ArgParser parser("annotate", Usage());
  parser.AddFlag("--folded", &folded);
  if (auto status = ParseAnnotateArgs(parser, args, &options)) return *status;
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
