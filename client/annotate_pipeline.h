// The pipeline behind `jitsym annotate` and `jitsym flamegraph`: reads `perf script` text,
// asks jitsymd about the frames perf could not name (by pid and sample time), and either writes
// the text back with the names filled in or hands every sample's stack to a StackSink.
#ifndef JITSYM_CLIENT_ANNOTATE_PIPELINE_H_
#define JITSYM_CLIENT_ANNOTATE_PIPELINE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "client/args.h"
#include "client/command.h"
#include "client/stack_sink.h"

namespace jitsym::client {

struct AnnotateOptions {
  const char* command = "annotate";  // names the command in warnings and the summary
  bool native = false;               // also ask about frames perf named in ELF files (--native)
  bool quiet = false;                // no warnings, no summary
  size_t batch_size = 8192;
  // With -i: the recording `perf script` runs on, and options added to its command line.
  std::optional<std::string> input;
  std::vector<std::string> perf_args;
  // Without input: bytes already read from stdin (at most LineReader::kMaxPrefixBytes), which
  // come first.
  std::string stdin_prefix;
};

// The usage text's paragraphs on input, shared by the commands that read perf script.
extern const char kPerfScriptInputHelp[];

// Parses the options every perf script reader takes (-i/--input, --native, --quiet, --batch
// N, and PERF-SCRIPT-OPTIONS after `--`) into *options, with the command's own options already
// added to `parser`. Returns an exit status to return right away (--help, a usage error).
std::optional<int> ParseAnnotateArgs(ArgParser& parser, const std::vector<std::string>& args,
                                     AnnotateOptions* options);

// Runs the pipeline on stdin (or `perf script -i` of options.input). Without a sink the
// annotated text goes to stdout; with one, every sample goes to the sink and nothing is
// written. Returns an exit status (errors reported on stderr).
int RunAnnotatePipeline(const GlobalOptions& globals, const AnnotateOptions& options,
                        StackSink* sink);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_ANNOTATE_PIPELINE_H_
