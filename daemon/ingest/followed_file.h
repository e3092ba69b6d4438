// A followed file: one side file the ingester reads as it grows, and the read loop that feeds
// its bytes to its Source within a turn's budget and the owner's limits. The loop also notices
// when the file no longer holds what was read from it (truncated, or rewritten in place), from
// the first and last bytes it read; what to do then (finish it, start over) is the caller's.
#ifndef JITSYM_DAEMON_INGEST_FOLLOWED_FILE_H_
#define JITSYM_DAEMON_INGEST_FOLLOWED_FILE_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "daemon/index/index_view.h"
#include "daemon/ingest/source.h"
#include "daemon/os/guarded_fs.h"
#include "daemon/security/limits.h"

namespace jitsym::ingest {

struct Incarnation;

struct FollowedFile {
  std::string dir;
  std::string name;
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  uint32_t uid = 0;  // the file's owner
  // Facts of the file when it was admitted (the trust rule may be applied again when an
  // .mlpd's header names its pid).
  uint64_t ctime_ns = 0;
  uint64_t nlink = 1;
  bool found_at_startup = false;
  int fd = -1;
  // A file on a guarded filesystem (os/mounts.h: FUSE): `fd` is this mirror's memfd, into which
  // a worker process copies what is new before each read; the daemon never opens the file
  // itself (a server that never answers would hold the thread that asked).
  std::unique_ptr<os::Mirror> mirror;
  // Descriptor given back while the file is idle (state still "following"); reopened by
  // path, when the same inode is there, on the next event.
  bool parked = false;
  // Finish as "closed" once everything is read (its process exited).
  bool close_when_drained = false;
  // ctime when it was finished: a later change at the same inode makes it a new file.
  timespec finished_ctime{};
  uint64_t offset = 0;  // next file offset to read
  uint64_t bytes_read = 0;
  uint64_t charged = 0;  // bytes charged to the limits: read plus decoded
  // The last bytes read and where they were: still there, or the file was rewritten.
  uint8_t tail[32] = {};
  size_t tail_len = 0;
  uint64_t tail_offset = 0;
  uint64_t checked_size = 0;  // file size when the tail was last checked
  // The first bytes read: a rewrite whose tail happens to match (code bytes, padding) still
  // differs at the start (header timestamp, first names).
  uint8_t head[64] = {};
  size_t head_len = 0;
  SourceState state = SourceState::kFollowing;
  std::unique_ptr<Source> source;
  Incarnation* incarnation = nullptr;
  // The pid its content names could not be judged (no descriptor to read /proc with): judged
  // again at the next read or maintenance tick, whichever comes first.
  bool judge_again = false;
  std::optional<std::string> image;  // image sources
  bool dirty = false;                // queued to be read
  bool changed = true;               // its view must be built again
  uint64_t last_data_ns = 0;
  // When the last bytes were read: a file that has not grown for a while has its source settled
  // (Source::Settle: a last line without its newline is indexed).
  uint64_t last_growth_ns = 0;
  bool settled = false;  // settled since it last grew: nothing to do until it grows again
  std::shared_ptr<const index::SourceView> view;
};

// Whether the file open as `fd` (now `size` bytes) no longer holds what `file` read from it:
// truncated below it, or its first or last bytes read differ.
bool Rewritten(const FollowedFile& file, int fd, uint64_t size);

// Why ReadNew stopped.
enum class ReadStop {
  kUnreadable,  // fstat failed: nothing was done
  kCaughtUp,    // read all there is (or waits for more bytes)
  kBudget,      // the turn's budget is spent with more to read
  kRewritten,   // the file no longer holds what was read (nothing was read)
  kLimit,       // a limit of `ledger` is reached: stop following the file
  kError,       // the source failed on the file's content: stop following the file
};

struct ReadTurn {
  security::LimitLedger& ledger;
  std::span<uint8_t> buffer;  // scratch for read(2)
  size_t budget;              // bytes to read (and inflate) in this turn
  uint64_t* bytes_ingested;   // incremented by the bytes read or seeked over
};

// Reads what is new in `file` (open) within the turn. Logs why it stops at a limit, an error or
// a rewrite. `size` (out): the file's size when the turn began.
ReadStop ReadNew(FollowedFile& file, ReadTurn& turn, uint64_t* size);

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_FOLLOWED_FILE_H_
