#include "daemon/ingest/perfmap_source.h"

#include <algorithm>
#include <stdexcept>

#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {

PerfmapSource::PerfmapSource(std::string path, const SourceContext& context,
                             std::function<uint64_t()> clock)
    : Source(std::move(path)),
      clock_(clock ? std::move(clock) : std::function<uint64_t()>(MonotonicNowNs)),
      initial_size_(context.initial_size),
      initial_time_(context.process_start_ns.value_or(0)) {
  // A map found with lines in it (a JVM's, or any after a daemon restart) is read at once:
  // size the range buffer and the name index for it rather than grow them by doubling (copying
  // and rehashing as they go). The buffer is sized for short lines: what stays unused of it is
  // never touched, so costs no memory, and is freed at the next publication. The name index is
  // filled when sized, so it is sized for typical lines (one more doubling if they are
  // shorter); a file of repeated names gets an index larger than it needed. Sized from the
  // bytes stored, not the size: a sparse map of one line must not cost a 128 MiB index.
  const uint64_t hint = context.allocated_size > 0
                            ? std::min(context.initial_size, context.allocated_size)
                            : context.initial_size;
  if (hint > 0) code_.Reserve(hint / 32, hint / 64);
}

void PerfmapSource::Feed(std::span<const uint8_t> data) {
  if (failed()) return;
  // Every line completed by these bytes was read now; the clock is read at most once per Feed.
  feed_time_known_ = false;
  feeding_ = data;
  // The index refusing more names (NameTable: over 1 GiB of them) stops this file, not the
  // daemon: what was indexed before stays.
  try {
    parser_.Feed(data, *this);
    FlushQueue();
  } catch (const std::length_error& e) {
    SetError(parser_.offset(), e.what());
  }
  feeding_ = {};
}

bool PerfmapSource::Settle() {
  if (failed()) return false;
  const uint32_t ranges = code_.ranges().size();
  const uint64_t records = records_;
  feed_time_known_ = false;
  feeding_ = {};
  try {
    parser_.Settle(*this);
    FlushQueue();
  } catch (const std::length_error& e) {
    SetError(parser_.offset(), e.what());
  }
  return code_.ranges().size() != ranges || records_ != records;
}

void PerfmapSource::OnWithdrawn(const perfmap::Entry& provisional) {
  FlushQueue();  // indexed in file order
  --records_;
  if (provisional_ && provisional_->start == provisional.start &&
      provisional_->size == provisional.size) {
    code_.RemoveBackdated(provisional_->start, provisional_->size, provisional_->time);
  }
  provisional_.reset();
}

void PerfmapSource::OnEntry(const perfmap::Entry& entry) {
  if (!entry.replaces) ++records_;  // a replacement is the same record, completed
  if (entry.size == 0) {            // defines nothing
    if (entry.provisional) provisional_.reset();
    return;
  }
  if (queue_size_ == kQueue) {
    // Popped before it is indexed (its slot is not reused until then), so that an exception
    // leaves the queue consistent.
    const Queued& oldest = queue_[queue_head_];
    queue_head_ = (queue_head_ + 1) % kQueue;
    --queue_size_;
    Index(oldest.entry, oldest.hash);
  }
  Queued& q = queue_[(queue_head_ + queue_size_) % kQueue];
  ++queue_size_;
  q.entry = entry;
  q.entry.name = entry.name.substr(0, index::NameTable::kMaxNameLength);
  // The queue is flushed before Feed returns, so a name in the bytes being fed stays valid.
  // One in the parser's own buffer (a line that began in an earlier Feed) may not: the parser
  // reuses it for the unfinished line at the end, so that name is copied.
  const auto* name = reinterpret_cast<const uint8_t*>(q.entry.name.data());
  if (name < feeding_.data() || name > feeding_.data() + feeding_.size()) {
    q.name.assign(q.entry.name);
    q.entry.name = q.name;
  }
  q.hash = index::NameTable::Hash(q.entry.name);
  code_.PrefetchName(q.hash);
}

void PerfmapSource::FlushQueue() {
  while (queue_size_ > 0) {
    const Queued& q = queue_[queue_head_];
    queue_head_ = (queue_head_ + 1) % kQueue;
    --queue_size_;
    Index(q.entry, q.hash);
  }
}

void PerfmapSource::Index(const perfmap::Entry& entry, uint32_t hash) {
  const uint64_t end = entry.start + entry.size;  // the parser rejects wrapping lines
  const uint32_t name = code_.Intern(entry.name, hash);
  // A line appended after discovery that reuses known addresses supersedes what was there from
  // the moment it was seen. One for fresh addresses contradicts nothing, and its code may be
  // much older than the line (the JVM writes its whole map at once, on request): it is valid
  // from the earliest plausible time.
  // A line that completes a provisional one to another meaning takes its place: same addresses
  // (the name is the only field a line can still grow), same validity, appended after it.
  uint64_t time = initial_time_;
  if (entry.replaces && provisional_) {
    time = provisional_->time;
    code_.AddBackdated(entry.start, entry.size, time, name);
  } else if (entry.offset >= initial_size_ && Covered(entry.start, end)) {
    if (!feed_time_known_) {
      feed_time_ = clock_();
      feed_time_known_ = true;
    }
    time = std::max(feed_time_, code_.ranges().last_time());  // what Add makes of it
    code_.Add(entry.start, entry.size, feed_time_, name);
  } else {
    code_.AddBackdated(entry.start, entry.size, time, name);
  }
  if (entry.provisional) {
    provisional_ = Provisional{entry.start, entry.size, time};
  } else {
    provisional_.reset();
  }
  Cover(entry.start, end);
}

bool PerfmapSource::Covered(uint64_t start, uint64_t end) const {
  auto it = covered_.upper_bound(start);  // first interval starting after start
  if (it != covered_.end() && it->first < end) return true;
  return it != covered_.begin() && std::prev(it)->second > start;
}

void PerfmapSource::Cover(uint64_t start, uint64_t end) {
  // Coalesced, so a JIT's contiguous code space stays a handful of intervals.
  // Extended in place when it touches the interval before it (code written in address order:
  // nearly every line), so the map does not allocate a node per line.
  auto it = covered_.upper_bound(start);
  while (it != covered_.end() && it->first <= end) {
    end = std::max(end, it->second);
    it = covered_.erase(it);
  }
  if (it != covered_.begin() && std::prev(it)->second >= start) {
    auto before = std::prev(it);
    before->second = std::max(before->second, end);
  } else {
    covered_.emplace_hint(it, start, end);
  }
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
