// The read loop of followed_file.h.
#include "daemon/ingest/followed_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/util/log.h"

namespace jitsym::ingest {

bool Rewritten(const FollowedFile& file, int fd, uint64_t size) {
  // Truncated below what was read, or the first or last bytes read are no longer there.
  auto differs = [fd](const uint8_t* saved, size_t len, uint64_t at) {
    uint8_t now[64];
    const ssize_t n = ::pread(fd, now, len, static_cast<off_t>(at));
    return n != static_cast<ssize_t>(len) || std::memcmp(now, saved, len) != 0;
  };
  return size < file.offset || differs(file.head, file.head_len, 0) ||
         differs(file.tail, file.tail_len, file.tail_offset);
}

ReadStop ReadNew(FollowedFile& file, ReadTurn& turn, uint64_t* size_out) {
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return ReadStop::kUnreadable;
  const auto size = static_cast<uint64_t>(st.st_size);
  *size_out = size;
  // Rewritten in place (truncated, then written again): the file is smaller, or it has grown
  // back past our offset already and the last bytes we read are no longer there.
  // Also when the size did not change: truncated and rewritten to the same length between two
  // looks (two small preads per event that brought nothing new). The first bytes are compared
  // too: a rewrite with the same tail (code bytes) differs at the start.
  bool rewritten = size < file.offset;
  if (!rewritten && file.tail_len > 0 && (size != file.checked_size || size == file.offset)) {
    rewritten = Rewritten(file, file.fd, size);
  }
  file.checked_size = size;
  if (rewritten) {
    JITSYM_LOG(kWarning, file.path, ": rewritten (", file.offset, " bytes read, now ", size,
               " bytes); keeping what was read and starting over");
    return ReadStop::kRewritten;
  }
  security::LimitLedger& ledger = turn.ledger;
  std::span<uint8_t> buf = turn.buffer;
  Source& src = *file.source;
  size_t budget = turn.budget;
  std::string limit;
  // Charges what the source decoded since `before` (a compressed file's inflated bytes).
  auto charge_decoded = [&](uint64_t before) {
    const uint64_t n = src.decoded_bytes() - before;
    file.charged += n;
    ledger.ChargeBytes(file.uid, n);
    budget -= std::min<uint64_t>(budget, n);
  };
  // Whether the file must stop at a limit or an error.
  auto stopped = [&]() -> std::optional<ReadStop> {
    if (Status ranges = ledger.CheckRanges(src.code().ranges().size()); !ranges.ok()) {
      JITSYM_LOG(kWarning, file.path, ": offset ", file.offset, ": ", ranges.error().message,
                 " reached; stopped reading this file, keeping its first ", src.records(),
                 " records");
      return ReadStop::kLimit;
    }
    if (src.failed()) {
      JITSYM_LOG(kWarning, file.path, ": offset ", src.error_offset(), ": ", src.error(),
                 "; stopped reading this file, keeping the ", src.records(), " records before it");
      return ReadStop::kError;
    }
    return std::nullopt;
  };
  while ((file.offset < size || src.backlog()) && budget > 0) {
    const uint64_t allowance = ledger.ByteAllowance(file.uid, file.charged, &limit);
    if (allowance == 0) {
      JITSYM_LOG(kWarning, file.path, ": offset ", file.offset, ": ", limit,
                 " reached; stopped reading this file, keeping the ", src.records(),
                 " records before it");
      return ReadStop::kLimit;
    }
    if (src.backlog()) {
      // Decode what was read before reading more: one bounded step per iteration, so the
      // budget (and the limits) count what the file expands to.
      const uint64_t before = src.decoded_bytes();
      src.Continue();
      charge_decoded(before);
      if (auto stop = stopped()) return *stop;
      if (src.decoded_bytes() == before && src.backlog()) break;  // no progress: wait for bytes
      continue;
    }
    if (uint64_t skip = src.skippable(); skip > 0) {
      // Code bytes nobody needs: seek over them (they count as ingested).
      const uint64_t n = std::min({skip, size - file.offset, allowance});
      src.Skip(n);
      file.offset += n;
      file.bytes_read += n;
      file.charged += n;
      *turn.bytes_ingested += n;
      ledger.ChargeBytes(file.uid, n);
      continue;
    }
    const size_t want = static_cast<size_t>(
        std::min<uint64_t>({buf.size(), size - file.offset, budget, allowance}));
    ssize_t got = ::pread(file.fd, buf.data(), want, static_cast<off_t>(file.offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    const uint64_t decoded_before = src.decoded_bytes();
    src.Feed({buf.data(), static_cast<size_t>(got)});
    // Remember the last bytes read, to notice a rewrite that grew past them.
    file.tail_len = std::min(sizeof(file.tail), static_cast<size_t>(got));
    file.tail_offset = file.offset + static_cast<uint64_t>(got) - file.tail_len;
    std::memcpy(file.tail, buf.data() + got - file.tail_len, file.tail_len);
    if (file.head_len == file.offset && file.head_len < sizeof(file.head)) {
      const size_t n = std::min(sizeof(file.head) - file.head_len, static_cast<size_t>(got));
      std::memcpy(file.head + file.head_len, buf.data(), n);
      file.head_len += n;
    }
    file.offset += static_cast<uint64_t>(got);
    file.bytes_read += static_cast<uint64_t>(got);
    file.charged += static_cast<uint64_t>(got);
    *turn.bytes_ingested += static_cast<uint64_t>(got);
    ledger.ChargeBytes(file.uid, static_cast<uint64_t>(got));
    budget -= std::min(budget, static_cast<size_t>(got));
    charge_decoded(decoded_before);
    if (auto stop = stopped()) return *stop;
  }
  return (file.offset < size || src.backlog()) && budget == 0 ? ReadStop::kBudget
                                                              : ReadStop::kCaughtUp;
}

}  // namespace jitsym::ingest
