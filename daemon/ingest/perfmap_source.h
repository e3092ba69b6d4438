// Follows one perf map (`perf-<pid>.map`) and stamps its lines with times, which the format
// lacks: lines already in the file when the daemon found it are valid from the process's start
// (or from time 0 when that is unknown), "later line wins" among them; a line appended
// afterwards that reuses addresses of earlier lines is valid from the CLOCK_MONOTONIC time the
// daemon read it, so it supersedes the older one from then on; one appended afterwards for
// fresh addresses is valid from the process's start like the first ones (see docs/formats.md,
// "perf maps"). A last line without its newline is indexed once the file stops growing
// (Settle); if later bytes complete it to another line, that one takes its place, with the
// same validity.
#ifndef JITSYM_DAEMON_INGEST_PERFMAP_SOURCE_H_
#define JITSYM_DAEMON_INGEST_PERFMAP_SOURCE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "daemon/formats/perfmap/perfmap_parser.h"
#include "daemon/ingest/source.h"

namespace jitsym::ingest {

class PerfmapSource : public Source, private perfmap::Sink {
 public:
  static constexpr Origin kOrigin = Origin::kPerfmap;
  // Malformed lines logged individually; the rest are only counted.
  static constexpr uint64_t kLoggedMalformed = 5;

  // `clock` gives the time of lines appended after discovery (tests substitute their own).
  PerfmapSource(std::string path, const SourceContext& context,
                std::function<uint64_t()> clock = nullptr);

  Origin origin() const override { return kOrigin; }
  void Feed(std::span<const uint8_t> data) override;
  bool Settle() override;
  uint64_t malformed() const { return parser_.malformed(); }

 private:
  void OnEntry(const perfmap::Entry& entry) override;
  // Entries wait in a short queue so that the name table slot of each is prefetched while the
  // ones before it are indexed: with millions of distinct names each lookup is a cache miss.
  void Index(const perfmap::Entry& entry, uint32_t hash);
  void FlushQueue();
  struct Queued {
    perfmap::Entry entry;  // entry.name: in the fed bytes or in name
    uint32_t hash = 0;
    std::string name;  // a copy of the name, when the fed bytes do not hold it
  };
  std::span<const uint8_t> feeding_;  // the bytes of the current Feed
  static constexpr size_t kQueue = 8;
  std::array<Queued, kQueue> queue_;
  size_t queue_head_ = 0;  // oldest
  size_t queue_size_ = 0;
  void OnMalformed(uint64_t offset, perfmap::LineError error) override;
  void OnWithdrawn(const perfmap::Entry& provisional) override;
  bool Covered(uint64_t start, uint64_t end) const;  // overlaps anything defined so far?
  void Cover(uint64_t start, uint64_t end);

  perfmap::Parser parser_;
  std::function<uint64_t()> clock_;
  uint64_t initial_size_;   // lines starting below this offset predate discovery
  uint64_t initial_time_;   // ... and are valid from this time
  uint64_t feed_time_ = 0;  // time of the lines of the current Feed, read once per Feed
  bool feed_time_known_ = false;
  std::map<uint64_t, uint64_t> covered_;  // start -> end of what lines have defined, coalesced
  // How the provisional entry (a last line without its newline) was indexed: its completion,
  // if it says something else, is indexed in its place with the same validity.
  struct Provisional {
    uint64_t start = 0;
    uint64_t size = 0;
    uint64_t time = 0;  // valid from (as indexed, backdated)
  };
  std::optional<Provisional> provisional_;
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_PERFMAP_SOURCE_H_
