// Follows one jitdump file: parses it incrementally and applies LOAD/MOVE to its CodeMap.
#ifndef JITSYM_DAEMON_INGEST_JITDUMP_SOURCE_H_
#define JITSYM_DAEMON_INGEST_JITDUMP_SOURCE_H_

#include <optional>
#include <vector>

#include "daemon/formats/jitdump/jitdump_parser.h"
#include "daemon/ingest/source.h"

namespace jitsym::ingest {

class JitdumpSource : public Source, private jitdump::Sink {
 public:
  static constexpr Origin kOrigin = Origin::kJitdump;

  explicit JitdumpSource(std::string path) : Source(std::move(path)) {}

  Origin origin() const override { return kOrigin; }
  void Feed(std::span<const uint8_t> data) override;
  uint64_t skippable() const override { return parser_.skippable(); }
  void Skip(uint64_t n) override { parser_.Skip(n); }
  bool closed() const override { return parser_.closed(); }
  std::optional<uint32_t> content_pid() const override { return pid_; }
  uint64_t unresolved_moves() const { return unresolved_moves_; }

 private:
  void OnHeader(const jitdump::Header& header) override;
  void OnCodeLoad(const jitdump::CodeLoad& load) override;
  void OnCodeMove(const jitdump::CodeMove& move) override;

  jitdump::Parser parser_;
  std::optional<uint32_t> pid_;
  uint64_t debug_bias_ = 0;
  uint64_t unresolved_moves_ = 0;
  std::vector<index::LineEntry> lines_;  // scratch
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_JITDUMP_SOURCE_H_
