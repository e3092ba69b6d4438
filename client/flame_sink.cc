// annotate's samples as a flame graph tree (see flame_sink.h).
#include "client/flame_sink.h"

#include "client/perf_script_parser.h"

namespace jitsym::client {

FrameKind FrameKindOfStackFrame(const StackFrame& frame) {
  if (frame.answer != nullptr) return FrameKindOf(frame.answer->origin);
  if (frame.name.empty()) return FrameKind::kUnknown;
  // The common case first: a file perf named the frame from (a library, the executable).
  const std::string_view dso = frame.dso;
  if (dso.size() > 1 && dso[0] == '/' && dso[1] != '/' && dso.rfind("/memfd:", 0) != 0) {
    const std::string_view base = dso.substr(dso.rfind('/') + 1);
    if (!base.starts_with("perf-") && !base.starts_with("jit-") && !base.starts_with("jitted-")) {
      return FrameKind::kNative;
    }
  }
  if (IsKernelDso(frame.dso)) return FrameKind::kKernel;
  // perf itself read a perf map (its dso is the map) or the jitted-*.so of `perf inject --jit`.
  if (PidOfJitDso(frame.dso)) return FrameKind::kPerfmap;
  if (frame.dso.find("/jitted-") != std::string_view::npos) return FrameKind::kJitdump;
  if (!frame.dso.empty() && IsJitDso(frame.dso)) return FrameKind::kUnknown;
  return FrameKind::kNative;
}

void FlameSink::BeginSample(std::string_view comm, int64_t, int64_t) {
  if (in_sample_) EndSample();
  in_sample_ = true;
  text_.clear();
  ends_.clear();
  AppendFoldName(comm.empty() ? std::string_view("[unknown]") : comm, &text_);
  ends_.emplace_back(static_cast<uint32_t>(text_.size()), FrameKind::kComm);
}

void FlameSink::AddFrame(const StackFrame& frame) {
  if (!in_sample_) return;
  // The names of annotate --folded (';' as ':'), so that the two agree name for name.
  AppendFoldName(frame.name.empty() ? std::string_view("[unknown]") : frame.name, &text_);
  ends_.emplace_back(static_cast<uint32_t>(text_.size()), FrameKindOfStackFrame(frame));
}

void FlameSink::EndSample() {
  if (!in_sample_) return;
  in_sample_ = false;
  frames_.clear();
  auto piece = [&](size_t i) {
    const uint32_t begin = i == 0 ? 0 : ends_[i - 1].first;
    return FlameFrame{std::string_view(text_.data() + begin, ends_[i].first - begin),
                      ends_[i].second};
  };
  frames_.push_back(piece(0));                                          // the comm
  for (size_t i = ends_.size(); i-- > 1;) frames_.push_back(piece(i));  // outermost first
  if (!tree_->Add(frames_, 1)) ++dropped_;
}

}  // namespace jitsym::client
