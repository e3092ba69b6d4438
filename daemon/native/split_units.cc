// Split units from the package or the .dwo files, read in memory (split_units.h).
#include "daemon/native/split_units.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/split_unit.h"
#include "daemon/native/debug_file_locator.h"
#include "daemon/native/file_ops.h"
#include "daemon/util/log.h"

namespace jitsym::native {
namespace {

std::string Join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

}  // namespace

std::vector<std::string> DwoCandidates(std::string_view binary_dir, std::string_view skeleton_dir,
                                       std::string_view comp_dir, std::string_view dwo_name) {
  std::vector<std::string> out;
  if (dwo_name.empty()) return out;
  auto add = [&out](std::string path) {
    for (const std::string& p : out) {
      if (p == path) return;
    }
    out.push_back(std::move(path));
  };
  if (dwo_name.front() == '/') {
    add(std::string(dwo_name));
    return out;
  }
  if (!binary_dir.empty()) add(Join(binary_dir, dwo_name));
  if (!skeleton_dir.empty()) add(Join(skeleton_dir, dwo_name));
  if (!comp_dir.empty()) {
    if (comp_dir.front() == '/') {
      add(Join(comp_dir, dwo_name));
    } else if (!skeleton_dir.empty()) {
      add(Join(Join(skeleton_dir, comp_dir), dwo_name));
    }
  }
  return out;
}

std::string DirectoryOfFd(int fd) {
  if (fd < 0) return {};
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  // The kernel's name for the open file, absolute and resolved (readlink asks no filesystem;
  // realpath would look every component up again, on a FUSE mount too).
  char target[PATH_MAX + 1];
  const ssize_t n = ::readlink(link, target, PATH_MAX);
  if (n <= 0 || target[0] != '/') return {};
  std::string path(target, static_cast<size_t>(n));
  if (path.starts_with("/memfd:")) return {};  // a copy of a FUSE file: no directory of its own
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {};
  return path.substr(0, slash + 1);
}

namespace {

constexpr std::string_view kSplitPrefix = "jitsymd-split-";

std::string SplitCopiesParent() {
  const char* tmp = ::getenv("TMPDIR");
  return tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp";
}

// Removes the entry `name` of the directory open as `dir`, and everything under it, following
// no symlink (a symlink is removed, not followed). `depth` bounds the recursion: the copies'
// subdirectories are the components of a dwo name.
void RemoveTree(int dir, const char* name, int depth, RemovedCopies* removed) {
  struct stat st {};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(dir, name, 0) == 0) removed->bytes += static_cast<uint64_t>(st.st_size);
    return;
  }
  if (depth > 64) return;
  const int fd = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return;
  }
  std::vector<std::string> entries;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      entries.emplace_back(e->d_name);
    }
  }
  for (const std::string& e : entries) RemoveTree(::dirfd(d), e.c_str(), depth + 1, removed);
  ::closedir(d);
  ::unlinkat(dir, name, AT_REMOVEDIR);
}

}  // namespace

RemovedCopies RemoveLeftoverSplitCopies() {
  RemovedCopies removed;
  const std::string parent = SplitCopiesParent();
  const int dir = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return removed;
  DIR* d = ::fdopendir(dir);
  if (d == nullptr) {
    ::close(dir);
    return removed;
  }
  std::vector<std::string> leftovers;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name.substr(0, kSplitPrefix.size()) != kSplitPrefix) continue;
    // jitsymd-split-<pid>-XXXXXX: earlier names without a pid are not touched (whose they are
    // cannot be told).
    const std::string_view rest = name.substr(kSplitPrefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string_view::npos || dash > 10) continue;
    uint64_t pid = 0;
    bool digits = true;
    for (char c : rest.substr(0, dash)) {
      digits = digits && c >= '0' && c <= '9';
      pid = pid * 10 + static_cast<uint64_t>(c - '0');
    }
    if (!digits || pid == 0 || pid > INT32_MAX) continue;
    // A live process with that pid (maybe another daemon, maybe a pid reused since): kept.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;
    struct stat st {};
    // Ours alone: a directory another user made under that name is not ours to remove (and
    // the sticky /tmp keeps others from replacing ours).
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != ::geteuid()) {
      continue;
    }
    leftovers.emplace_back(name);
  }
  for (const std::string& name : leftovers) {
    RemoveTree(::dirfd(d), name.c_str(), 0, &removed);
    ++removed.directories;
  }
  ::closedir(d);
  return removed;
}

bool ReadCompanion(const std::string& path, uint32_t owner, uint64_t max_bytes, std::string* bytes,
                   std::string* note) {
  // Non-blocking: a FIFO does not block the open; never mapped: the bytes are read once.
  const int fd = Files().open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR) {
      JITSYM_LOG(kInfo, path, ": not read: ", std::strerror(errno));
    }
    return false;  // as absent: what the daemon alone could see is not told
  }
  struct stat st {};
  bool ok = false;
  std::string why;
  if (::fstat(fd, &st) != 0 || !CompanionOwnerAllowed(st.st_uid, owner, &why)) {
    // Another user's file is no companion of this binary, and whoever asks about the binary
    // is not told it is there: as absent (the log says why, for the operator).
    JITSYM_LOG(kInfo, path, ": not read: ", why.empty() ? std::string("fstat failed") : why);
  } else if (!S_ISREG(st.st_mode)) {
    *note = path + " is not a regular file: not read";
  } else if (st.st_size <= 0 || static_cast<uint64_t>(st.st_size) > max_bytes) {
    *note = path + ": " + std::to_string(st.st_size) + " bytes: not read (at most " +
            std::to_string(max_bytes) + ")";
  } else {
    bytes->resize(static_cast<size_t>(st.st_size));
    const size_t done = PreadFromStart(fd, bytes);
    ok = done == bytes->size();
    if (!ok) *note = path + ": shorter than its size (" + std::to_string(done) + " bytes read)";
  }
  ::close(fd);
  if (!ok) bytes->clear();
  return ok;
}

std::unique_ptr<SplitUnits> SplitUnits::Open(const std::string& binary, int binary_fd,
                                             const std::string& skeleton_file, int skeleton_fd,
                                             dwarf::Budget* budget) {
  std::unique_ptr<SplitUnits> s(new SplitUnits());
  s->binary_ = binary;
  s->skeleton_file_ = skeleton_file;
  s->binary_dir_ = DirectoryOfFd(binary_fd);
  s->skeleton_dir_ = DirectoryOfFd(skeleton_fd);
  s->budget_ = budget;
  struct stat st {};
  // Unknown: root's alone count.
  s->owner_ = ::fstat(binary_fd, &st) == 0 ? st.st_uid : 0;
  std::vector<std::string> packages = {binary + ".dwp"};
  if (skeleton_file != binary) packages.push_back(skeleton_file + ".dwp");
  for (const std::string& p : packages) {
    std::string bytes, why;
    if (!ReadCompanion(p, s->owner_, kMaxSplitBytes, &bytes, &why)) {
      if (why.empty()) continue;  // no package there
    } else if (Result<std::unique_ptr<DwarfFile>> f =
                   DwarfFile::FromBytes(std::move(bytes), p, *budget);
               !f) {
      why = f.error().message;
    } else if (const Error* e = (*f)->context().index_error()) {
      why = p + ": " + e->message;
    } else {
      s->read_bytes_ += (*f)->Bytes();
      s->dwp_ = std::move(*f);
      break;
    }
    JITSYM_LOG(kWarning, why, "; split units only from .dwo files");
    if (s->dwp_note_.empty()) s->dwp_note_ = why;
  }
  return s;
}

const std::string& SplitUnits::dwp_file() const {
  static const std::string kNone;
  return dwp_ ? dwp_->name() : kNone;
}

size_t SplitUnits::Bytes() const {
  return sizeof(*this) + read_bytes_.load(std::memory_order_relaxed);
}

SplitUnits::Dwo SplitUnits::Read(const dwarf::Unit& skeleton,
                                 const std::vector<std::string>& candidates) {
  Dwo d;
  auto note = [&d](const std::string& n) { d.notes += (d.notes.empty() ? "" : "; ") + n; };
  std::string absent;
  for (const std::string& c : candidates) {
    const size_t used = read_bytes_.load(std::memory_order_relaxed);
    const uint64_t room = used >= kMaxSplitBytes ? 0 : kMaxSplitBytes - used;
    std::string bytes, why;
    if (!ReadCompanion(c, owner_, std::min(kMaxDwoBytes, room), &bytes, &why)) {
      if (why.empty()) {
        absent += (absent.empty() ? "no " : " nor ") + c;
      } else {
        note(room < kMaxDwoBytes && why.find(" bytes: not read") != std::string::npos
                 ? c + ": not read: this module's split DWARF files would pass " +
                       std::to_string(kMaxSplitBytes) + " bytes"
                 : why);
      }
      continue;
    }
    Result<std::unique_ptr<DwarfFile>> f = DwarfFile::FromBytes(std::move(bytes), c, *budget_);
    if (!f) {
      note(f.error().message);
      continue;
    }
    Result<std::optional<dwarf::Unit>> unit =
        dwarf::OpenSplitUnit(skeleton, (*f)->context(), *budget_);
    if (!unit) {
      note(c + ": " + unit.error().message);
      continue;
    }
    if (!*unit) {
      note(c + ": no split unit with the skeleton's dwo id");
      continue;
    }
    read_bytes_.fetch_add((*f)->Bytes(), std::memory_order_relaxed);
    d.file = std::move(*f);
    d.notes.clear();
    return d;
  }
  if (dwp_ == nullptr) {
    absent += (absent.empty() ? "no " : " nor ") + binary_ + ".dwp";
    if (!dwp_note_.empty()) absent += " (unreadable: see the log)";
  }
  d.notes = absent + (absent.empty() || d.notes.empty() ? "" : "; ") + d.notes;
  return d;
}

SplitUnit SplitUnits::Find(const dwarf::Unit& skeleton) {
  SplitUnit out;
  const std::string_view dwo_name = skeleton.dwo_name();
  const uint64_t dwo_id = skeleton.dwo_id().value_or(0);
  char id_text[32];
  std::snprintf(id_text, sizeof(id_text), "0x%016" PRIx64, dwo_id);
  const std::string what =
      !skeleton.name().empty()
          ? "the split DWARF of " + std::string(skeleton.name()) + ", dwo id " + id_text
          : std::string("dwo id ") + id_text;
  std::string notes;
  // A package's unit wins over a .dwo (a package is made from the build's .dwo files; those
  // left behind may be older).
  if (dwp_ != nullptr) {
    Result<std::optional<dwarf::Unit>> unit =
        dwarf::OpenSplitUnit(skeleton, dwp_->context(), *budget_);
    if (unit && *unit) {
      out.unit = std::move(**unit);
      return out;
    }
    notes = dwp_->name() + ": " +
            (unit ? std::string("no split unit with the skeleton's dwo id") : unit.error().message);
  }
  if (dwo_name.empty()) {
    out.missing = (notes.empty() ? "" : notes + "; ") + skeleton_file_ +
                  ": a skeleton unit without DW_AT_dwo_name (" + what + ")";
    return out;
  }
  const DwarfFile* file = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = dwos_.find(std::string(dwo_name));
    if (it == dwos_.end()) {
      it = dwos_
               .emplace(std::string(dwo_name),
                        Read(skeleton, DwoCandidates(binary_dir_, skeleton_dir_,
                                                     skeleton.comp_dir(), dwo_name)))
               .first;
    }
    file = it->second.file.get();
    if (file == nullptr) {
      const std::string& n = it->second.notes;
      out.missing = (notes.empty() ? "" : notes + "; ") +
                    (n.empty() ? "no split unit for " + std::string(dwo_name) : n) + " (" + what +
                    ")";
      return out;
    }
  }
  Result<std::optional<dwarf::Unit>> unit =
      dwarf::OpenSplitUnit(skeleton, file->context(), *budget_);
  if (unit && *unit) {
    out.unit = std::move(**unit);
    return out;
  }
  out.missing =
      file->name() + ": " +
      (unit ? std::string("no split unit with the skeleton's dwo id") : unit.error().message) +
      " (" + what + ")";
  return out;
}

}  // namespace jitsym::native
