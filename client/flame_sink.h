// annotate's samples as a flame graph tree (flame_graph.h): the comm, then the stack outermost
// first, each frame with the kind that colours it (the JIT format that named it, native,
// kernel, unknown). The same names as `annotate --folded`, so the counts agree.
#ifndef JITSYM_CLIENT_FLAME_SINK_H_
#define JITSYM_CLIENT_FLAME_SINK_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "client/flame_graph.h"
#include "client/stack_sink.h"

namespace jitsym::client {

// The kind of a frame as annotate saw it: jitsymd's origin when it named it, else from perf's
// dso (kernel, an ELF file, a JIT side file perf read itself), unknown when nobody named it.
FrameKind FrameKindOfStackFrame(const StackFrame& frame);

class FlameSink : public StackSink {
 public:
  explicit FlameSink(FlameTree* tree) : tree_(tree) {}

  void BeginSample(std::string_view comm, int64_t pid, int64_t tid) override;
  void AddFrame(const StackFrame& frame) override;
  void EndSample() override;

  // Samples the tree could not take (its total would pass what the graph counts exactly).
  uint64_t dropped() const { return dropped_; }

 private:
  FlameTree* tree_;
  bool in_sample_ = false;
  // The current sample's names back to back (the comm first, then leaf first), with their kinds:
  // copied, since a sample's lines may span two batches of the pipeline.
  std::string text_;
  std::vector<std::pair<uint32_t, FrameKind>> ends_;  // end offset in text_, kind
  std::vector<FlameFrame> frames_;
  uint64_t dropped_ = 0;
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_FLAME_SINK_H_
