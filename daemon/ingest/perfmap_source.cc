#include "daemon/ingest/perfmap_source.h"

#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {

PerfmapSource::PerfmapSource(std::string path, const SourceContext& context,
                             std::function<uint64_t()> clock)
    : Source(std::move(path)),
      clock_(clock ? std::move(clock) : std::function<uint64_t()>(MonotonicNowNs)),
      initial_size_(context.initial_size),
      initial_time_(context.process_start_ns.value_or(0)) {}

void PerfmapSource::Feed(std::span<const uint8_t> data) {
  // Every line completed by these bytes was read now; the clock is read at most once per Feed.
  feed_time_known_ = false;
  parser_.Feed(data, *this);
}

void PerfmapSource::OnEntry(const perfmap::Entry& entry) {
  ++records_;
  if (entry.size == 0) return;  // defines nothing
  uint64_t time = initial_time_;
  if (entry.offset >= initial_size_) {
    if (!feed_time_known_) {
      feed_time_ = clock_();
      feed_time_known_ = true;
    }
    time = feed_time_;
  }
  code_.Add(entry.start, entry.size, time, code_.Intern(entry.name));
}

void PerfmapSource::OnMalformed(uint64_t offset, perfmap::LineError error) {
  const uint64_t n = parser_.malformed();
  if (n <= kLoggedMalformed) {
    JITSYM_LOG(kWarning, path_, ": offset ", offset, ": ", perfmap::LineErrorName(error),
               "; line skipped",
               n == kLoggedMalformed ? " (further malformed lines are counted, not logged)" : "");
  }
}

}  // namespace jitsym::ingest
