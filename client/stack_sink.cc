// Collapsed stacks from annotate's samples (see stack_sink.h).
#include "client/stack_sink.h"

#include <algorithm>

namespace jitsym::client {

bool IsKernelDso(std::string_view dso) {
  return dso.rfind("[kernel.", 0) == 0 || dso.rfind("[guest.kernel", 0) == 0;
}

void AppendFoldName(std::string_view name, std::string* out) {
  const size_t at = out->size();
  out->resize(at + name.size());
  // Branch-free per byte, so that the compiler vectorizes it: every frame of every sample
  // passes here.
  const auto* from = reinterpret_cast<const unsigned char*>(name.data());
  auto* to = reinterpret_cast<unsigned char*>(out->data() + at);
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = from[i];
    to[i] = c < 0x20 ? ' ' : c == ';' ? ':' : c;
  }
}

void FoldedSink::BeginSample(std::string_view comm, int64_t, int64_t) {
  if (in_sample_) EndSample();
  in_sample_ = true;
  comm_.clear();
  AppendFoldName(comm.empty() ? std::string_view("[unknown]") : comm, &comm_);
}

void FoldedSink::AddFrame(const StackFrame& frame) {
  std::string& s = stack_.emplace_back();
  AppendFoldName(frame.name.empty() ? std::string_view("[unknown]") : frame.name, &s);
}

void FoldedSink::EndSample() {
  if (!in_sample_) return;
  in_sample_ = false;
  std::string key = comm_;
  for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) {
    key.push_back(';');
    key.append(*it);
  }
  ++folded_[key];
  stack_.clear();
}

void FoldedSink::Write(std::string* out, const std::function<void()>& maybe_flush) const {
  std::vector<std::pair<std::string_view, uint64_t>> stacks(folded_.begin(), folded_.end());
  std::sort(stacks.begin(), stacks.end());
  for (const auto& [stack, count] : stacks) {
    out->append(stack);
    out->push_back(' ');
    out->append(std::to_string(count));
    out->push_back('\n');
    maybe_flush();
  }
}

}  // namespace jitsym::client
