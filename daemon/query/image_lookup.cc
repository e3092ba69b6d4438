#include "daemon/query/image_lookup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/ingest/r2rmap_source.h"
#include "daemon/os/guarded_fs.h"
#include "daemon/security/access_rules.h"
#include "daemon/security/limits.h"
#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::query {
namespace {

constexpr uint64_t kRetryLoadNs = 1000000000ull;  // a missing r2rmap is looked for again after 1 s
constexpr uint64_t kMaxFileBytes = 1ull << 30;
constexpr size_t kReadChunk = 1 << 20;

// Feeds an r2rmap of --r2rmap-dir to `src` as it is read, 1 MiB at a time, up to kMaxFileBytes
// and its owner's byte quota; the bytes read, or nullopt if it is no regular file or cannot be
// read. Where a bound stops it, what was read is used and the log says where.
std::optional<uint64_t> FeedFile(const std::string& path, ingest::R2rmapSource& src,
                                 security::LimitLedger* ledger) {
  // Never waited for on a FUSE server from a query thread (os/guarded_fs.h): a map on such a
  // mount is read from a worker's copy.
  auto opened = os::OpenForReading(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (!opened || opened->error != 0) return std::nullopt;
  struct stat st = opened->st;
  int fd = -1;
  if (opened->mirror) {
    auto copy = os::CopyWhole(opened->mirror->file(), kMaxFileBytes);
    if (!copy) {
      JITSYM_LOG(kWarning, path, ": not read: ", copy.error().message);
      return std::nullopt;
    }
    st = copy->st;
    fd = copy->memfd.release();
    ::lseek(fd, 0, SEEK_SET);
  } else {
    fd = opened->fd.release();
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  std::vector<uint8_t> buf(kReadChunk);
  uint64_t offset = 0;
  std::string stop;
  for (;;) {
    uint64_t want = std::min<uint64_t>(buf.size(), kMaxFileBytes - offset);
    std::string which = "per-file bound (" + std::to_string(kMaxFileBytes) + " bytes)";
    if (ledger) want = std::min(want, ledger->ByteAllowance(st.st_uid, offset, &which));
    if (want == 0) {
      stop = which;
      break;
    }
    const ssize_t n = ::read(fd, buf.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    if (ledger) ledger->ChargeBytes(st.st_uid, static_cast<uint64_t>(n));
    offset += static_cast<uint64_t>(n);
    src.Feed({buf.data(), static_cast<size_t>(n)});
  }
  ::close(fd);
  if (!stop.empty()) {
    JITSYM_LOG(kWarning, path, ": offset ", offset, ": not read further: ", stop,
               "; the records before it are used");
  }
  return offset;
}

// An answer from an image source; `base` is where the image is (0 for RVA lookups).
Answer FromImage(const index::Symbol& sym, const index::SourceView& source, proto::Origin origin,
                 uint64_t base) {
  Answer a;
  a.name = sym.name;
  a.start = base + sym.start;
  a.size = sym.size;
  a.origin = origin;
  a.source = source.path;
  a.image = source.image;
  return a;
}

proto::Origin OriginOf(const index::SourceView& source) { return source.origin; }

// kLoaded: the state of sources loaded from --r2rmap-dir (the ingester never uses it).
bool FromOperatorDir(const index::SourceView& source) {
  return source.state == SourceState::kLoaded;
}

// The owner of a map file now; nullopt if it can no longer be examined.
std::optional<uint32_t> MapOwner(const index::SourceView& source) {
  // Never asked of a FUSE server from a query thread (os/guarded_fs.h).
  auto e = os::StatPath(source.path, /*no_follow_last=*/true);
  if (!e || e->error != 0) return std::nullopt;
  return static_cast<uint32_t>(e->st.st_uid);
}

// The maps of one image believed for `for_uid` (security::BelieveImageMap), in precedence
// order (security::ImageMapRank): a map that would not be believed never hides one that is.
ImageLookup::Sources Believed(std::vector<std::shared_ptr<const index::SourceView>> sources,
                              uint32_t for_uid) {
  const uint32_t daemon_uid = ::geteuid();
  std::vector<std::pair<int, std::shared_ptr<const index::SourceView>>> ranked;
  for (auto& s : sources) {
    const bool op = FromOperatorDir(*s);
    const std::optional<uint32_t> owner = op ? std::nullopt : MapOwner(*s);
    if (!security::BelieveImageMap(op, owner, for_uid, daemon_uid)) continue;
    ranked.emplace_back(security::ImageMapRank(op, owner, daemon_uid), std::move(s));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  ImageLookup::Sources out;
  for (auto& [rank, s] : ranked) out.push_back(std::move(s));
  return out;
}

}  // namespace

std::string NormalizeSignature(std::string_view text) {
  std::string out;
  if (text.size() == 38 && text.front() == '{' && text.back() == '}') {
    text = text.substr(1, 36);
  }
  for (char c : text) {
    if (c == '-' && text.size() == 36) continue;
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return {};
    out.push_back(c);
  }
  return out.size() == 32 ? out : std::string();
}

ImageLookup::ImageLookup(Options options, ProcessSnapshots& processes)
    : options_(std::move(options)), processes_(processes) {}

std::shared_ptr<const index::SourceView> ImageLookup::LoadFromDirs(const std::string& name) {
  if (options_.search_dirs.empty() || name.empty() || name == "." || name == "..") return nullptr;
  std::lock_guard lock(load_mu_);
  const uint64_t now = MonotonicNowNs();
  if (auto it = loaded_.find(name); it != loaded_.end()) {
    if (it->second.source || now - it->second.checked_ns < kRetryLoadNs) return it->second.source;
  }
  Loaded& entry = loaded_[name];
  entry.checked_ns = now;
  for (const std::string& dir : options_.search_dirs) {
    const std::string path = dir + "/" + name + ".ni.r2rmap";
    ingest::R2rmapSource src(path);
    const std::optional<uint64_t> bytes = FeedFile(path, src, options_.ledger.get());
    if (!bytes) continue;
    src.Settle();  // read whole: a last line without its newline counts
    if (src.failed() && src.records() == 0) {
      JITSYM_LOG(kWarning, path, ": offset ", src.error_offset(), ": ", src.error());
      continue;
    }
    auto v = std::make_shared<index::SourceView>();
    v->origin = src.origin();
    v->path = path;
    v->image = name;
    v->image_signature = src.image_signature();
    v->state = SourceState::kLoaded;
    v->bytes_read = *bytes;
    v->code = src.code().CompactAll();
    v->ranges = v->code->ranges().size();
    JITSYM_LOG(kInfo, "loaded ", path, " (", v->ranges, " ranges) for image ", name);
    entry.source = std::move(v);
    break;
  }
  return entry.source;
}

ImageLookup::Sources ImageLookup::FindByName(const index::IndexView& view, const std::string& name,
                                             uint32_t for_uid) {
  // Every candidate, the operator's --r2rmap-dir map included even when a watched directory
  // has maps of that name (one of them may be planted): Believed orders and filters them.
  Sources out;
  if (auto loaded = LoadFromDirs(name)) out.push_back(std::move(loaded));
  if (auto it = view.images.find(name); it != view.images.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return Believed(std::move(out), for_uid);
}

ImageLookup::Sources ImageLookup::FindBySignature(const index::IndexView& view,
                                                  const std::string& signature, uint32_t for_uid) {
  Sources out;
  for (const auto& [name, sources] : view.images) {
    for (const auto& s : sources) {
      if (NormalizeSignature(s->image_signature) == signature) out.push_back(s);
    }
  }
  {
    std::lock_guard lock(load_mu_);
    for (const auto& [name, loaded] : loaded_) {
      if (loaded.source && NormalizeSignature(loaded.source->image_signature) == signature) {
        out.push_back(loaded.source);
      }
    }
  }
  return Believed(std::move(out), for_uid);
}

bool ImageLookup::LookupImage(LookupBatch& batch, uint32_t for_uid) {
  const index::IndexView& view = batch.view();
  const std::string& image = *batch.request().image;
  Sources sources = FindByName(view, ImageNameFromPath(image), for_uid);
  if (sources.empty()) {
    const std::string sig = NormalizeSignature(image);
    if (!sig.empty()) sources = FindBySignature(view, sig, for_uid);
  }
  if (sources.empty()) return false;
  for (const auto& s : sources) batch.Keep(s);
  // All addresses go to the index together (as for processes): their cache misses overlap.
  std::vector<uint64_t> rvas;
  std::vector<size_t> where;
  rvas.reserve(batch.pending().size());
  where.reserve(batch.pending().size());
  for (size_t i : batch.pending()) {
    if (batch.addr(i) > 0xFFFFFFFFu) continue;  // RVAs are 32-bit
    rvas.push_back(batch.addr(i));
    where.push_back(i);
  }
  std::vector<std::optional<index::Symbol>> found(rvas.size());
  for (const auto& s : sources) {
    const proto::Origin origin = OriginOf(*s);
    if (!batch.AllowsOrigin(origin) || rvas.empty()) continue;
    s->code->FindBatch(rvas.data(), rvas.size(), std::nullopt, found.data());
    // Only maps believed for the client answer (Believed); of those, only the ones it could
    // read itself: the others' answers are denied, asked once per map.
    std::optional<bool> readable;
    for (size_t k = 0; k < rvas.size(); ++k) {
      if (!found[k] || !batch.is_pending(where[k])) continue;
      if (!readable) readable = batch.access().MayRead(s->path);
      if (*readable) {
        batch.Answer(where[k], FromImage(*found[k], *s, origin, 0));
      } else {
        batch.Deny(where[k]);
      }
    }
  }
  return true;
}

std::optional<ImageLookup::LiveProcess> ImageLookup::LiveMappedImages(const index::IndexView& view,
                                                                      uint32_t pid) {
  // Read now, not from the cache (which keeps the snapshot of a process that has exited), and
  // only if the pid still names the same process once its maps are read.
  std::shared_ptr<const ProcessSnapshot> images = processes_.ReadLive(pid);
  if (!images) return std::nullopt;
  LiveProcess out;
  out.identity = images->identity;
  // An image placed at many bases is looked up once (its maps' owners are read each time).
  std::unordered_map<std::string_view, std::shared_ptr<const index::SourceView>> by_name;
  images->ForEachPlaced([&](const ProcessSnapshot::Placed& img) {
    if (img.name.empty()) return;
    auto [it, inserted] = by_name.try_emplace(img.name);
    if (inserted) {
      Sources sources = FindByName(view, img.name, images->identity.uid);
      if (!sources.empty()) it->second = std::move(sources.front());  // the one a lookup uses
    }
    if (it->second != nullptr) out.images.push_back({it->second, img.base, img.end});
  });
  return out;
}

std::optional<proto::ErrorResponse> ImageLookup::Resolve(LookupBatch& batch) {
  if (!batch.AllowsOrigin(proto::Origin::kR2rmap)) return std::nullopt;
  const index::IndexView& view = batch.view();
  const security::PeerAccess& access = batch.access();
  const uint32_t pid = batch.processes().LivePid();  // a thread's process
  std::vector<size_t> todo = batch.pending();
  if (todo.empty()) return std::nullopt;
  bool fresh = false;
  std::shared_ptr<const ProcessSnapshot> images = processes_.Current(pid, &fresh);
  if (images && !access.MaySeeProcess(images->identity.uid)) return std::nullopt;
  std::unordered_map<std::string, Sources> by_name;  // this request's image resolutions
  for (int pass = 0; pass < 2 && images && !todo.empty(); ++pass) {
    std::vector<size_t> misses;
    for (size_t i : todo) {
      const uint64_t addr = batch.addr(i);
      const ProcessSnapshot::Placed* placed = images->PlacedAt(addr);
      if (placed == nullptr) {
        misses.push_back(i);
        continue;
      }
      const ProcessSnapshot::Placed& img = *placed;
      const uint64_t rva = addr - img.base;
      if ((img.end != 0 && addr >= img.end) || rva > 0xFFFFFFFFu) {
        misses.push_back(i);
        continue;
      }
      if (img.name.empty()) continue;  // a native library: not an image
      auto [it, inserted] = by_name.try_emplace(img.name);
      if (inserted) {
        // Anyone can put a map in a shared watch directory such as /tmp: for a process, only
        // the maps believed for its owner count.
        it->second = FindByName(view, img.name, images->identity.uid);
        for (const auto& s : it->second) batch.Keep(s);
      }
      for (const auto& s : it->second) {
        if (auto sym = s->code->Find(rva, std::nullopt)) {
          batch.Answer(i, FromImage(*sym, *s, OriginOf(*s), img.base));
          break;
        }
      }
    }
    // Addresses outside every known image: the process may have mapped more since the table
    // was read. Read it again, once per request, while the process lives.
    if (misses.empty() || fresh) break;
    images = processes_.Refreshed(pid, &fresh);
    if (!fresh || !access.MaySeeProcess(images->identity.uid)) break;
    todo.swap(misses);
  }
  return std::nullopt;
}

}  // namespace jitsym::query
