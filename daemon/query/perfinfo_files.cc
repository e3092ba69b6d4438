// Follows processes' perfinfo maps (see perfinfo_files.h).
#include "daemon/query/perfinfo_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "daemon/formats/perfinfo/perfinfo_parser.h"
#include "daemon/os/guarded_fs.h"
#include "daemon/security/file_trust.h"
#include "daemon/security/limits.h"
#include "daemon/util/log.h"

namespace jitsym::query {
namespace {

constexpr size_t kReadChunk = 256 * 1024;
// A file name is at most NAME_MAX bytes: a longer "image name" names no file.
constexpr size_t kMaxNameBytes = 255;

bool EndsWithNoCase(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    char a = s[s.size() - suffix.size() + i];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
    if (a != suffix[i]) return false;
  }
  return true;
}

}  // namespace

bool IsDll(std::string_view path) { return EndsWithNoCase(path, ".dll"); }

std::string ImageNameFromPath(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
  if (IsDll(path)) path.remove_suffix(4);
  return std::string(path);
}

// One process's file as far as it was read.
struct PerfinfoFiles::File {
  ~File() {
    if (ledger && charged > 0) ledger->ReleaseBytes(owner, charged);
  }

  std::mutex mu;  // one reader at a time; guards what follows
  std::string path;
  uint64_t start_ticks = 0;  // the process it describes
  dev_t dev = 0;
  ino_t ino = 0;
  uint32_t owner = 0;  // the file's, charged for what was read
  perfinfo::PerfInfoParser parser;
  uint64_t offset = 0;   // bytes read (the parser holds any partial last line)
  bool stopped = false;  // a limit was reached: nothing more is read
  bool reported_long = false;
  std::shared_ptr<const std::vector<PlacedImage>> images;
  std::shared_ptr<security::LimitLedger> ledger;
  uint64_t charged = 0;
};

PerfinfoFiles::PerfinfoFiles(Options options) : options_(std::move(options)) {}

PerfinfoFiles::~PerfinfoFiles() = default;

std::shared_ptr<const std::vector<PlacedImage>> PerfinfoFiles::Read(
    uint32_t pid, const os::ProcessIdentity& identity) {
  const std::string path = options_.dir + "/perfinfo-" + std::to_string(pid) + ".map";
  // Never waited for on a FUSE server (a user may mount one over a file of his in /tmp): such a
  // file is not read at all (os/guarded_fs.h).
  auto opened = os::OpenForReading(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (!opened || opened->error != 0 || opened->mirror || !opened->fd.valid()) return nullptr;
  const struct stat st = opened->st;
  const int fd = opened->fd.release();
  if (!S_ISREG(st.st_mode) ||
      security::JudgeProcessFile(st.st_uid, identity.uid) != security::FileVerdict::kTrusted) {
    ::close(fd);
    return nullptr;
  }
  std::shared_ptr<File> file;
  {
    std::lock_guard lock(mu_);
    auto& slot = files_[pid];
    // Another process with this pid, or another file at the path (replaced, or rewritten
    // shorter): read from the start. The old table goes when no snapshot holds it.
    if (!slot || slot->start_ticks != identity.start_ticks || slot->dev != st.st_dev ||
        slot->ino != st.st_ino || static_cast<uint64_t>(st.st_size) < slot->offset) {
      if (!slot && files_.size() > kMaxProcesses) {
        files_.erase(files_.begin() == files_.find(pid) ? std::next(files_.begin())
                                                        : files_.begin());
      }
      slot = std::make_shared<File>();
      slot->path = path;
      slot->start_ticks = identity.start_ticks;
      slot->dev = st.st_dev;
      slot->ino = st.st_ino;
      slot->owner = st.st_uid;
      slot->ledger = options_.ledger;
    }
    file = slot;
  }
  std::lock_guard lock(file->mu);
  if (!file->stopped && static_cast<uint64_t>(st.st_size) > file->offset) {
    ReadMore(*file, fd, static_cast<uint64_t>(st.st_size));
  }
  ::close(fd);
  return file->images;
}

void PerfinfoFiles::ReadMore(File& file, int fd, uint64_t size) {
  std::vector<perfinfo::PerfInfoImage> found;
  std::string buf(kReadChunk, '\0');
  std::string stop;  // why reading stops here, for the log
  while (file.offset < size) {
    uint64_t want = std::min<uint64_t>(kReadChunk, size - file.offset);
    if (file.offset + want > kMaxFileBytes) {
      want = kMaxFileBytes - file.offset;
      if (want == 0) {
        stop = "more than " + std::to_string(kMaxFileBytes >> 20) + " MiB";
        break;
      }
    }
    if (file.ledger) {
      std::string which;
      want = std::min(want, file.ledger->ByteAllowance(file.owner, file.offset, &which));
      if (want == 0) {
        stop = which;
        break;
      }
    }
    const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(file.offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // shrunk meanwhile (read again from the start next time) or unreadable
    if (file.ledger) file.ledger->ChargeBytes(file.owner, static_cast<uint64_t>(n));
    file.charged += static_cast<uint64_t>(n);
    file.offset += static_cast<uint64_t>(n);
    file.parser.Feed(std::string_view(buf.data(), static_cast<size_t>(n)), &found);
  }
  if (!stop.empty()) {
    file.stopped = true;
    JITSYM_LOG(kWarning, file.path, ": offset ", file.parser.consumed(),
               ": not read further: ", stop, "; the images placed before it are used");
  }
  if (file.parser.long_lines() > 0 && !file.reported_long) {
    file.reported_long = true;
    JITSYM_LOG(kWarning, file.path, ": offset ", file.parser.first_long_line(),
               ": line longer than ", perfinfo::PerfInfoParser::kMaxLineBytes,
               " bytes; skipped (later ones are skipped silently)");
  }
  if (found.empty()) return;
  // The new images sorted by base, the last line for a base winning, then merged with those
  // read before (which a later line for the same base replaces): O(n log n) for what is new,
  // O(n) for the rest.
  std::vector<PlacedImage> fresh;
  fresh.reserve(found.size());
  for (perfinfo::PerfInfoImage& img : found) {
    std::string name = ImageNameFromPath(img.path);
    if (name.empty() || name.size() > kMaxNameBytes) continue;
    fresh.push_back({std::move(name), img.base, 0});
  }
  std::stable_sort(fresh.begin(), fresh.end(),
                   [](const PlacedImage& a, const PlacedImage& b) { return a.base < b.base; });
  std::vector<PlacedImage> unique;
  unique.reserve(fresh.size());
  for (PlacedImage& img : fresh) {
    if (!unique.empty() && unique.back().base == img.base) {
      unique.back() = std::move(img);
    } else {
      unique.push_back(std::move(img));
    }
  }
  auto merged = std::make_shared<std::vector<PlacedImage>>();
  const std::vector<PlacedImage> none;
  const std::vector<PlacedImage>& old = file.images ? *file.images : none;
  merged->reserve(std::min(old.size() + unique.size(), kMaxImages));
  auto o = old.begin();
  auto u = unique.begin();
  while ((o != old.end() || u != unique.end()) && merged->size() < kMaxImages) {
    if (u == unique.end() || (o != old.end() && o->base < u->base)) {
      merged->push_back(*o++);
    } else {
      if (o != old.end() && o->base == u->base) ++o;  // replaced by the later line
      merged->push_back(std::move(*u++));
    }
  }
  if (merged->size() >= kMaxImages && (o != old.end() || u != unique.end()) && !file.stopped) {
    file.stopped = true;
    JITSYM_LOG(kWarning, file.path, ": more than ", kMaxImages, " images; the rest are not used");
  }
  file.images = std::move(merged);
}

}  // namespace jitsym::query
