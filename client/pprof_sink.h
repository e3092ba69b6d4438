// annotate's samples as a pprof profile (profile.proto): every distinct frame a location with
// its mapping (the dso perf printed, the image or side file jitsymd named it from, with its
// build id), its function and, where the JIT or DWARF gave them, source file and line and the
// inlined chain; every sample labelled with its pid, tid and comm, and the labels the user gave.
// Identical samples are one sample with their count.
#ifndef JITSYM_CLIENT_PPROF_SINK_H_
#define JITSYM_CLIENT_PPROF_SINK_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "client/profile_proto.h"
#include "client/stack_sink.h"

namespace jitsym::client {

class PprofSink : public StackSink {
 public:
  // `labels` go on every sample (host=..., service=...); `comments` into the profile's.
  PprofSink(const std::vector<std::pair<std::string, std::string>>& labels,
            const std::vector<std::string>& comments);

  void BeginSample(std::string_view comm, int64_t pid, int64_t tid) override;
  void AddFrame(const StackFrame& frame) override;
  void EndSample() override;
  uint32_t extra_fields() const override {
    return proto::kFieldPosition | proto::kFieldBuildId | proto::kFieldFrames;
  }

  // The profile, once, at the end. Its first mapping is an executable file where there is one
  // (pprof shows the first mapping as the profile's main binary).
  pprof::Profile Take();

 private:
  uint64_t MappingOf(std::string_view file, std::string_view build_id, bool named);

  pprof::ProfileBuilder builder_;
  std::vector<pprof::Label> fixed_labels_;
  bool in_sample_ = false;
  int64_t pid_ = -1;
  std::vector<uint64_t> locations_;  // the current sample's, leaf first
  std::vector<pprof::Label> labels_;
  std::vector<pprof::Line> lines_;
  std::string key_;
};

// Writes `data` to `path` ("-": stdout). False after saying why on stderr.
bool WriteFileBytes(std::string_view data, const std::string& path);

// Writes `profile` gzip'd to `path` ("-": stdout). False after saying why on stderr.
bool WriteProfileFile(const pprof::Profile& profile, const std::string& path);

// "KEY=VALUE" into a label; false (and *error says why) when it is not one.
bool ParseLabel(std::string_view text, std::pair<std::string, std::string>* label,
                std::string* error);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_PPROF_SINK_H_
