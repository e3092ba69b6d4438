// Where annotate's samples go when they are not written back as text: each sample's stack,
// leaf first, with the names perf printed or jitsymd gave. One pipeline reads `perf script`
// and asks jitsymd; a sink decides what a profile becomes (collapsed stacks, a flame graph, a
// pprof protobuf), so that all of them name every frame alike.
#ifndef JITSYM_CLIENT_STACK_SINK_H_
#define JITSYM_CLIENT_STACK_SINK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/protocol.h"

namespace jitsym::client {

// One frame of a sample, valid only during the AddFrame call: a sink copies what it keeps.
struct StackFrame {
  // jitsymd's name when it named the frame, else perf's symbol without its +0xOFF; empty
  // when neither named it.
  std::string_view name;
  const proto::LookupResult* answer = nullptr;  // jitsymd's answer when it named the frame
  uint64_t ip = 0;       // as perf printed it (a callchain entry of a file: its file offset)
  std::string_view dso;  // as perf printed it, without parentheses; empty when not printed
};

class StackSink {
 public:
  virtual ~StackSink() = default;
  // A sample begins; pid is what jitsymd was asked by (-1: none), tid -1 when not printed.
  virtual void BeginSample(std::string_view comm, int64_t pid, int64_t tid) = 0;
  // Its frames, leaf first.
  virtual void AddFrame(const StackFrame& frame) = 0;
  virtual void EndSample() = 0;
  // The lookup fields the sink needs beyond name, offset, origin, source and image.
  virtual uint32_t extra_fields() const { return 0; }
};

// perf's dso of kernel code: "[kernel.kallsyms]", "[kernel.vmlinux]", a module "[ext4]" is not
// told apart from other bracketed names, so only the kernel image and "[guest.kernel...]".
bool IsKernelDso(std::string_view dso);

// A name as one element of a collapsed stack: ';' (the separator) becomes ':', control
// characters spaces.
void AppendFoldName(std::string_view name, std::string* out);

// Collapsed stacks, "comm;outer;...;leaf COUNT" per distinct stack, sorted: the input of
// flame graph tools (flamegraph.pl, inferno, speedscope).
class FoldedSink : public StackSink {
 public:
  void BeginSample(std::string_view comm, int64_t pid, int64_t tid) override;
  void AddFrame(const StackFrame& frame) override;
  void EndSample() override;
  // The stacks, sorted, one per line.
  void Write(std::string* out, const std::function<void()>& maybe_flush) const;

 private:
  bool in_sample_ = false;
  std::string comm_;
  std::vector<std::string> stack_;  // leaf first
  std::unordered_map<std::string, uint64_t> folded_;
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_STACK_SINK_H_
