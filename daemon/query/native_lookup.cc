#include "daemon/query/native_lookup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "daemon/native/file_ops.h"
#include "daemon/os/guarded_fs.h"
#include "daemon/os/mounts.h"
#include "daemon/os/process_maps.h"
#include "daemon/query/native_files.h"
#include "daemon/util/log.h"

namespace jitsym::query {

// A file's answers as its parser gave them, with the frames in the form answers borrow.
struct NativeLookup::Read {
  parse_worker::SymbolizeReply reply;
  std::vector<native::NativeFrame> frames;  // reply.frames, in the form answers borrow
  uint32_t owner = 0;                       // the file's owner, as stat'ed here
  std::string path;
  // The strings of the file's table, by id (the same bytes from answer to answer), and the
  // table that holds them.
  std::shared_ptr<const NativeStrings::Table> store;
  std::vector<std::string_view> strings;
  std::string_view build_id;  // reply.build_id

  std::string_view String(uint32_t k) const { return strings[k]; }
  std::span<const native::NativeFrame> FramesOf(size_t k) const {
    const parse_worker::AddressAnswer& a = reply.answers[k];
    return {frames.data() + a.first_frame, a.frame_count};
  }
  // Why it answers nothing for an address: a stripped file has only its dynamic symbols (if
  // any), so most of its code has no name to give.
  proto::Reason MissReason() const {
    return reply.stripped ? proto::Reason::kNoDebugInfo : proto::Reason::kNoSymbol;
  }
  // Where a miss was, for its detail: the file, and why its DWARF was not read if it was not.
  std::string Where(std::string_view image) const {
    std::string where(image);
    if (!reply.dwarf_refusal.empty()) where += " (" + reply.dwarf_refusal + ")";
    return where;
  }
};

namespace {

native::ModuleCache::Options CacheOptions(const NativeOptions& o) {
  native::ModuleCache::Options c;
  c.debug_dirs = o.debug_dirs;
  c.budget_bytes = o.cache_bytes;
  return c;
}

std::unique_ptr<parse_worker::Parser> MakeParser(const NativeOptions& o) {
  if (!o.workers) return std::make_unique<parse_worker::InProcessParser>(CacheOptions(o));
  parse_worker::PoolOptions pool = o.pool;
  pool.debug_dirs = o.debug_dirs;
  pool.cache_bytes = o.cache_bytes;
  return std::make_unique<parse_worker::WorkerPool>(std::move(pool));
}

// The answer for the k-th address of a read. `addr` is the address asked for: start is
// reported in the caller's address space. Name, file and frames are borrowed from the read,
// and `image` is borrowed too (the response keeps both alive).
Answer FromRead(const NativeLookup::Read& read, size_t k, std::string_view image, uint64_t addr) {
  static constexpr std::string_view kUnknown = "??";
  const parse_worker::AddressAnswer& a = read.reply.answers[k];
  Answer r;
  r.name = a.name == 0 ? kUnknown : read.String(a.name);
  r.start = addr - (a.vaddr - a.start);
  r.size = a.size;
  r.origin = proto::Origin::kElf;
  r.image = image;
  r.build_id = read.build_id;
  r.frames = read.FramesOf(k);
  r.clone = read.String(a.clone);
  if (a.missing != 0) {
    r.reason = proto::Reason::kNoDebugInfo;
    r.detail = read.String(a.missing);
  }
  if (!r.frames.empty() && !r.frames.front().file.empty()) {
    r.file = r.frames.front().file;
    r.line = r.frames.front().line;
    r.column = r.frames.front().column;
  }
  return r;
}

// Answers the addresses `index` (batch positions, in the order they were asked of the file).
void AnswerFrom(LookupBatch& batch, const NativeLookup::Read& read,
                const std::vector<size_t>& index, std::string_view image) {
  for (size_t k = 0; k < index.size(); ++k) {
    const parse_worker::AddressAnswer& a = read.reply.answers[k];
    if (a.state == parse_worker::AddressAnswer::kFound) {
      batch.Answer(index[k], FromRead(read, k, image, batch.addr(index[k])));
    } else if (a.state == parse_worker::AddressAnswer::kMiss) {
      batch.NoteMiss(index[k], read.MissReason(), read.Where(image));
    }
  }
}

}  // namespace

NativeLookup::NativeLookup(NativeOptions options, ProcessSnapshots& processes)
    : parser_(MakeParser(options)), processes_(processes), debug_dirs_(options.debug_dirs) {
  // native/ opens what mappings and debug links name: never on a query thread when it lies
  // on a FUSE mount (a worker copies it).
  InstallGuardedNativeFiles();
}

bool NativeLookup::IsNativeImageRequest(const proto::LookupRequest& request,
                                        const security::WalkedPath* walked,
                                        std::string* unanswered) {
  if (request.build_id) return true;
  if (walked == nullptr || !walked->regular) return false;
  // A client's descriptor is a /proc link, followed to the file it holds.
  auto opened =
      os::OpenForReading(walked->resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
                                               (walked->client_descriptor ? 0 : O_NOFOLLOW));
  if (!opened) {
    *unanswered = opened.error().message;
    return false;
  }
  if (opened->error != 0) return false;
  const struct stat& st = opened->st;
  int fd = opened->fd.get();
  if (opened->mirror) {
    // On a FUSE mount: its first bytes, copied by a worker.
    if (Status copied = opened->mirror->Copy(0, 0, 4); !copied.ok()) {
      *unanswered = copied.error().message;
      return false;
    }
    fd = opened->mirror->fd();
  }
  char magic[4] = {};
  return S_ISREG(st.st_mode) && st.st_dev == walked->dev && st.st_ino == walked->ino &&
         ::pread(fd, magic, 4, 0) == 4 && std::memcmp(magic, "\177ELF", 4) == 0;
}

Result<std::shared_ptr<const NativeLookup::Read>> NativeLookup::ReadFile(
    const std::string& path, std::optional<native::FileId> expect,
    const std::vector<uint64_t>& addrs, bool file_offsets, bool all_frames, bool* failed,
    const std::string& name_or_empty) {
  *failed = false;
  const std::string& name = name_or_empty.empty() ? path : name_or_empty;
  const native::FileOps& files = native::Files();
  parse_worker::SymbolizeRequest request;
  bool served = false;
  if (!files.stat(path, true, &request.st, &served)) {
    return MakeError(ErrorKind::kIo, name + ": " + std::strerror(errno));
  }
  const struct stat& st = request.st;
  if (expect && (st.st_dev != expect->dev || st.st_ino != expect->ino)) {
    return MakeError(ErrorKind::kIo, name + ": replaced while being opened");
  }
  if (!S_ISREG(st.st_mode)) return MakeError(ErrorKind::kIo, name + ": not a regular file");
  os::UniqueFd fd(files.open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return MakeError(ErrorKind::kIo, name + ": " + std::strerror(errno));
  if (struct stat now{}; !served && (::fstat(fd.get(), &now) != 0 || now.st_dev != st.st_dev ||
                                     now.st_ino != st.st_ino)) {
    return MakeError(ErrorKind::kIo, name + ": replaced while being opened");
  }
  request.path = name;
  request.file_offsets = file_offsets;
  request.all_frames = all_frames;
  request.addrs = addrs;
  auto read = std::make_shared<Read>();
  for (int attempt = 0;; ++attempt) {
    // Only the strings not had yet come back (native_strings.h); asked once more for all when
    // what came does not fit what is here (a table dropped meanwhile).
    const NativeStrings::Known known = attempt == 0 ? strings_.KnownOf(st) : NativeStrings::Known{};
    request.strings_token = known.token;
    request.strings_known = known.count;
    Result<parse_worker::SymbolizeReply> reply = parser_->Symbolize(request, fd.get());
    if (!reply) {
      *failed = true;
      return std::move(reply).error();
    }
    if (!reply->error.empty()) return MakeError(ErrorKind::kIo, std::move(reply->error));
    read->reply = std::move(*reply);
    auto table =
        strings_.Merge(st, read->reply.strings_token, read->reply.strings_base,
                       std::move(read->reply.strings), read->reply.build_id, &read->strings);
    read->reply.strings.clear();
    if (table) {
      read->store = *table;
      break;
    }
    if (attempt == 1) {
      *failed = true;
      return MakeError(ErrorKind::kLimit, name + ": " + table.error().message);
    }
  }
  // Every id an answer names must be one the daemon has.
  const size_t count = read->strings.size();
  bool ok = true;
  for (const parse_worker::AddressAnswer& a : read->reply.answers) {
    ok = ok && a.name < count && a.clone < count && a.missing < count;
  }
  for (const parse_worker::AnswerFrame& f : read->reply.frames) {
    ok = ok && f.name < count && f.file < count;
  }
  if (!ok) {
    *failed = true;
    return MakeError(ErrorKind::kLimit, name + ": its reader named a string it never sent");
  }
  read->owner = st.st_uid;
  read->path = name;
  read->build_id = read->store->build_id;  // at one address from answer to answer
  read->frames.reserve(read->reply.frames.size());
  for (const parse_worker::AnswerFrame& f : read->reply.frames) {
    read->frames.push_back({read->String(f.name), read->String(f.file), f.line, f.column});
  }
  if (read->reply.answers.size() != addrs.size()) {
    *failed = true;
    return MakeError(ErrorKind::kLimit, name + ": its reader answered " +
                                            std::to_string(read->reply.answers.size()) + " of " +
                                            std::to_string(addrs.size()) + " addresses");
  }
  if (!read->reply.build_id.empty()) {
    std::lock_guard lock(build_ids_mu_);
    if (build_id_paths_.size() < 65536) build_id_paths_[{read->reply.build_id, read->owner}] = name;
  }
  return std::shared_ptr<const Read>(std::move(read));
}

std::optional<proto::ErrorResponse> NativeLookup::LookupImage(LookupBatch& batch,
                                                              const security::WalkedPath* walked) {
  if (!batch.AllowsOrigin(proto::Origin::kElf)) return std::nullopt;
  const proto::LookupRequest& request = batch.request();
  std::string id = request.build_id.value_or("");
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::vector<size_t> index = batch.pending();
  std::vector<uint64_t> addrs(index.size());
  for (size_t k = 0; k < index.size(); ++k) addrs[k] = batch.addr(index[k]);
  std::shared_ptr<const Read> read;
  std::string error, failure;
  const bool all_frames = (request.fields & proto::kFieldFrames) != 0;
  if (walked != nullptr) {
    // A path the peer may read (checked by the caller): that very file, found by the walk,
    // and maybe the build id it must have.
    bool failed = false;
    auto r = ReadFile(walked->resolved, native::FileId{walked->dev, walked->ino}, addrs,
                      request.file_offset, all_frames, &failed,
                      walked->client_descriptor ? *request.image : std::string());
    if (r) {
      read = *r;
      if (request.build_id && read->reply.build_id != id) {
        return proto::ErrorResponse{std::string(proto::kErrNotFound),
                                    *request.image + " does not have build id " + id};
      }
    } else {
      (failed ? failure : error) = r.error().message;
    }
  } else {
    // Root's file first, then the asker's own; only files the peer could read itself are
    // candidates, and one it may not read is answered exactly as a build id no file has: no
    // path is named. Anyone can write a file claiming another's build id: its answers are its
    // owner's alone.
    const uint32_t asker = batch.access().uid();
    bool hex = id.size() >= 4 && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
                 return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
               });
    if (!hex) {
      return proto::ErrorResponse{std::string(proto::kErrNotFound),
                                  "build id '" + id + "' is not lower-case hex"};
    }
    std::vector<std::string> candidates;
    {
      std::lock_guard lock(build_ids_mu_);
      for (const uint32_t owner : {uint32_t{0}, asker}) {
        if (auto it = build_id_paths_.find({id, owner}); it != build_id_paths_.end()) {
          candidates.push_back(it->second);
        }
        if (asker == 0) break;
      }
    }
    for (const std::string& dir : debug_dirs_) {
      const std::string base = dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2);
      candidates.push_back(base);
      candidates.push_back(base + ".debug");
    }
    for (const std::string& c : candidates) {
      if (!batch.access().MayRead(c)) continue;
      bool failed = false;
      auto r = ReadFile(c, std::nullopt, addrs, request.file_offset, all_frames, &failed);
      if (r && (*r)->reply.build_id == id && ((*r)->owner == 0 || (*r)->owner == asker)) {
        read = *r;
        break;
      }
      if (!r && failed) failure = r.error().message;
    }
    if (!read) error = "no ELF file with build id " + id + " is known";
  }
  if (!read && !failure.empty()) {
    // Its reader failed: every address says so, and which file and what limit.
    for (size_t i : index) batch.NoteMiss(i, proto::Reason::kNativeFailed, failure);
    return std::nullopt;
  }
  if (!read) return proto::ErrorResponse{std::string(proto::kErrNotFound), error};
  batch.Keep(read);
  // Borrowed by every answer: kept with the response, since the request may not outlive it.
  auto image = std::make_shared<const std::string>(request.image ? *request.image : read->path);
  batch.Keep(image);
  AnswerFrom(batch, *read, index, *image);
  return std::nullopt;
}

std::optional<proto::ErrorResponse> NativeLookup::Resolve(LookupBatch& batch) {
  if (!batch.AllowsOrigin(proto::Origin::kElf)) return std::nullopt;
  const security::PeerAccess& access = batch.access();
  const uint32_t pid = batch.processes().LivePid();  // a thread's process
  std::vector<size_t> todo = batch.pending();
  if (todo.empty()) return std::nullopt;
  const bool all_frames = (batch.request().fields & proto::kFieldFrames) != 0;
  bool fresh = false;
  std::shared_ptr<const ProcessSnapshot> table = processes_.Current(pid, &fresh);
  if (!table || !access.MaySeeProcess(table->identity.uid)) return std::nullopt;
  batch.Keep(table);  // answers borrow the mapped files' paths
  for (int pass = 0; pass < 2 && !todo.empty(); ++pass) {
    std::vector<size_t> misses;
    // Each address to its mapping, as a file offset; each mapping's file read once, with its
    // addresses in order (its tables are walked forward).
    std::sort(todo.begin(), todo.end(),
              [&](size_t a, size_t b) { return batch.addr(a) < batch.addr(b); });
    std::map<const ExecMapping*, std::pair<std::vector<size_t>, std::vector<uint64_t>>> by_map;
    for (size_t i : todo) {
      const uint64_t addr = batch.addr(i);
      auto next = std::upper_bound(table->exec.begin(), table->exec.end(), addr,
                                   [](uint64_t a, const ExecMapping& m) { return a < m.start; });
      if (next == table->exec.begin() || addr >= std::prev(next)->end) {
        misses.push_back(i);
        continue;
      }
      const ExecMapping& map = *std::prev(next);
      auto& [index, offsets] = by_map[&map];
      index.push_back(i);
      offsets.push_back(addr - map.start + map.offset);
    }
    for (const auto& [map, work] : by_map) {
      const auto& [index, offsets] = work;
      TakeUnanswered();
      const std::string path =
          os::MappedFilePath(pid, map->path, map->dev, map->inode, map->start, map->end);
      const bool gone = path.empty();
      std::string error;
      std::shared_ptr<const Read> read;
      bool failed = false;
      if (gone) {
        error = map->path +
                " no longer names the file the process mapped there (replaced or deleted "
                "since): not read";
      } else if (auto r = ReadFile(path, std::nullopt, offsets, true, all_frames, &failed)) {
        read = *r;
      } else {
        error = r.error().message;
      }
      if (read) {
        batch.Keep(read);
        AnswerFrom(batch, *read, index, map->path);
        continue;
      }
      // Why it could not be had, said in each answer: its reader failed, its FUSE server did
      // not answer, or the file is not the one mapped any more.
      std::string why;
      proto::Reason reason = proto::Reason::kImageUnreadable;
      if (failed) {
        reason = proto::Reason::kNativeFailed;
        why = error;
      } else if (std::string unanswered = TakeUnanswered(); !unanswered.empty()) {
        why = map->path + ": not read: " + unanswered;
      } else if (std::shared_ptr<const os::Mount> fs = os::MountOfDevice(map->dev, pid);
                 !fs || fs->guarded()) {
        // A guarded mount is not asked what it holds: whether the path still names the
        // mapped file is not known either.
        const os::Mount& m = fs ? *fs : os::UnlistedMount();
        why = (gone ? map->path + ": not read" : error) + " (on " + m.Describe() + ", " +
              m.guard_reason + ")";
      } else if (gone) {
        why = error;
      }
      if (why.empty()) continue;
      for (size_t i : index) batch.NoteMiss(i, reason, why);
    }
    // Outside every executable mapping known: the process may have mapped more since.
    if (misses.empty() || fresh) break;
    std::shared_ptr<const ProcessSnapshot> again = processes_.Refreshed(pid, &fresh);
    if (!fresh || !again || !access.MaySeeProcess(again->identity.uid)) break;
    if (again->identity.start_ticks != table->identity.start_ticks) break;  // pid reused
    table = again;
    batch.Keep(table);
    todo.swap(misses);
  }
  return std::nullopt;
}

}  // namespace jitsym::query
