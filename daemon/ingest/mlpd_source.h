// Follows one Mono log profiler file (*.mlpd): parses it incrementally and indexes the code it
// describes (JIT-compiled methods, trampolines and helpers, native symbols Mono resolved).
//
// Time: on Linux the log profiler stamps events with clock_gettime(CLOCK_MONOTONIC) in
// nanoseconds (log.c current_time()), which is the index's clock, so event times are used as
// they are. On other systems (macOS mach_absolute_time, Windows QPC) they would not be; jitsymd
// only runs on Linux. See docs/formats.md for what is exact and what is not.
#ifndef JITSYM_DAEMON_INGEST_MLPD_SOURCE_H_
#define JITSYM_DAEMON_INGEST_MLPD_SOURCE_H_

#include <optional>
#include <string>
#include <vector>

#include "daemon/formats/mlpd/mlpd_parser.h"
#include "daemon/ingest/source.h"

namespace jitsym::ingest {

class MlpdSource : public Source, private mlpd::Sink {
 public:
  static constexpr Origin kOrigin = Origin::kMlpd;
  // Mono probes native code every 16 bytes and reports a symbol where the name changes, with
  // size 0: such a symbol is indexed over those 16 bytes.
  static constexpr uint64_t kUnsizedSymbolBytes = 16;

  explicit MlpdSource(std::string path, mlpd::Limits limits = {})
      : Source(std::move(path)), parser_(limits) {}

  Origin origin() const override { return kOrigin; }
  void Feed(std::span<const uint8_t> data) override;
  std::optional<uint32_t> content_pid() const override { return pid_; }
  bool backlog() const override { return parser_.backlog(); }
  void Continue() override;
  uint64_t decoded_bytes() const override { return parser_.inflated(); }
  void Release() override { parser_.Release(); }

  struct Image {
    uint64_t address = 0;
    uint64_t time = 0;
    std::string name;
  };
  // Images the process loaded (for context), in file order: the first kMaxImages, their names
  // cut as symbol names are (a file of image events must not cost memory without bound).
  static constexpr size_t kMaxImages = 4096;
  const std::vector<Image>& images() const { return images_; }
  uint64_t bad_buffers() const { return parser_.bad_buffers(); }
  const mlpd::Parser& parser() const { return parser_; }

 private:
  void OnHeader(const mlpd::Header& header) override;
  void OnCode(const mlpd::Code& code) override;
  void OnImage(const mlpd::ImageLoad& image) override;
  void OnBadEvent(uint64_t buffer_offset, uint64_t offset, const std::string& why) override;

  mlpd::Parser parser_;
  std::optional<uint32_t> pid_;
  std::vector<Image> images_;
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_MLPD_SOURCE_H_
