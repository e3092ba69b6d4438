// Split units from checked copies, for libdw to link (split_units.h).
#include "daemon/native/split_units.h"

#include <dirent.h>
#include <dwarf.h>
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

#include "daemon/native/dwp_package.h"
#include "daemon/native/file_ops.h"
#include "daemon/native/file_trust.h"
#include "daemon/util/log.h"

namespace jitsym::native {
namespace {

std::string Join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

const char* AttrString(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  if (dwarf_attr(die, name, &attr) == nullptr) return nullptr;
  return dwarf_formstring(&attr);
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The dwo ids of the split compile units in the file `path` (written here), found as libdw
// finds them when it links a skeleton (try_split_file in libdw_find_split_unit.c).
std::vector<uint64_t> SplitIds(const std::string& path) {
  std::vector<uint64_t> ids;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return ids;
  if (Dwarf* d = dwarf_begin(fd, DWARF_C_READ); d != nullptr) {
    Dwarf_CU* cu = nullptr;
    uint8_t type = 0;
    for (int guard = 0;
         guard < 4096 && dwarf_get_units(d, cu, &cu, nullptr, &type, nullptr, nullptr) == 0;
         ++guard) {
      uint64_t id = 0;
      if (type == DW_UT_split_compile &&
          dwarf_cu_info(cu, nullptr, nullptr, nullptr, nullptr, &id, nullptr, nullptr) == 0) {
        ids.push_back(id);
      }
    }
    dwarf_end(d);
  }
  ::close(fd);
  return ids;
}

bool WriteAll(const std::string& path, std::string_view bytes, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = path + ": " + std::strerror(n < 0 ? errno : ENOSPC);
      ::close(fd);
      ::unlink(path.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return true;
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

bool HasSkeletonUnits(Dwarf* dwarf) {
  Dwarf_CU* cu = nullptr;
  uint8_t type = 0;
  while (dwarf_get_units(dwarf, cu, &cu, nullptr, &type, nullptr, nullptr) == 0) {
    if (type == DW_UT_skeleton) return true;
  }
  return false;
}

SplitUnits::~SplitUnits() {
  skeletons_.Close();
  for (auto it = written_.rbegin(); it != written_.rend(); ++it) {
    if (::unlink(it->c_str()) != 0) ::rmdir(it->c_str());
  }
  if (!dir_.empty()) ::rmdir(dir_.c_str());
}

std::unique_ptr<SplitUnits> SplitUnits::Open(const std::string& binary, int binary_fd,
                                             const std::string& skeleton_file, int skeleton_fd,
                                             Elf* source, std::string* error) {
  std::unique_ptr<SplitUnits> s(new SplitUnits());
  s->binary_ = binary;
  s->skeleton_file_ = skeleton_file;
  s->binary_dir_ = DirectoryOfFd(binary_fd);
  s->skeleton_dir_ = DirectoryOfFd(skeleton_fd);
  std::string templ = SplitCopiesParent() + "/" + std::string(kSplitPrefix) +
                      std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {  // 0700
    *error = templ + ": " + std::strerror(errno);
    return nullptr;
  }
  s->dir_ = templ + "/";
  // The skeletons' copy, named as their file is (libdw reads a Dwarf's name nowhere; a dwo name
  // that is the same cannot be placed, the file exists: that unit is reported missing).
  const std::string copy = s->dir_ + BaseName(skeleton_file);
  if (!WriteDebugSections(source, copy, error)) return nullptr;
  s->written_.push_back(copy);
  s->skeletons_ = OpenElf(copy, error);
  if (s->skeletons_.elf == nullptr) return nullptr;
  s->fixed_bytes_ = DebugSectionBytes(s->skeletons_.elf);
  std::vector<std::string> packages = {binary + ".dwp"};
  if (skeleton_file != binary) packages.push_back(skeleton_file + ".dwp");
  for (const std::string& p : packages) {
    struct stat st {};
    bool served = false;
    if (!Files().stat(p, true, &st, &served)) continue;
    std::string why;
    s->dwp_ = DwpPackage::Open(p, &why);
    if (s->dwp_ != nullptr) {
      s->fixed_bytes_ += s->dwp_->Bytes();
      break;
    }
    JITSYM_LOG(kWarning, why, "; split units only from .dwo files");
    if (s->dwp_note_.empty()) s->dwp_note_ = why;
  }
  return s;
}

const std::string& SplitUnits::dwp_file() const {
  static const std::string kNone;
  return dwp_ ? dwp_->path() : kNone;
}

size_t SplitUnits::Bytes() const {
  return sizeof(*this) + fixed_bytes_ + copied_bytes_.load(std::memory_order_relaxed);
}

bool SplitUnits::MakeParents(std::string_view dwo_name, std::string* error) {
  for (size_t slash = dwo_name.find('/'); slash != std::string_view::npos;
       slash = dwo_name.find('/', slash + 1)) {
    const std::string d = dir_ + std::string(dwo_name.substr(0, slash));
    if (::mkdir(d.c_str(), 0700) == 0) {
      written_.push_back(d);
    } else if (errno != EEXIST) {
      *error = d + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

void SplitUnits::Forget(const std::string& path) {
  ::unlink(path.c_str());
  written_.erase(std::remove(written_.begin(), written_.end(), path), written_.end());
}

bool SplitUnits::ReadDwo(const std::string& path, std::string* bytes, std::string* note) {
  // Non-blocking: a FIFO does not block the open; never mapped: the bytes are read once.
  const int fd = Files().open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR) *note = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  bool ok = false;
  const size_t copied = copied_bytes_.load(std::memory_order_relaxed);
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *note = path + " is not a regular file: not read";
  } else if (st.st_size <= 0 || static_cast<uint64_t>(st.st_size) > kMaxDwoBytes) {
    *note = path + ": " + std::to_string(st.st_size) + " bytes: not read (at most " +
            std::to_string(kMaxDwoBytes) + ")";
  } else if (copied + static_cast<uint64_t>(st.st_size) > kMaxCopiedBytes) {
    *note = path + ": not read: this module's copies of split units would pass " +
            std::to_string(kMaxCopiedBytes) + " bytes";
  } else {
    bytes->resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < bytes->size()) {
      const ssize_t n =
          ::pread(fd, bytes->data() + done, bytes->size() - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ok = done == bytes->size();
    if (!ok) *note = path + ": shorter than its size (" + std::to_string(done) + " bytes read)";
  }
  ::close(fd);
  if (!ok) bytes->clear();
  return ok;
}

SplitUnits::Placed SplitUnits::Place(std::string_view dwo_name, uint64_t id,
                                     const std::vector<std::string>& candidates) {
  Placed p;
  const std::string out = dir_ + std::string(dwo_name);
  std::string error;
  // The name's directories, made once a file is to be written (not for names never found).
  bool parents = false;
  auto make_parents = [&]() {
    if (!parents && !MakeParents(dwo_name, &error)) {
      p.notes += (p.notes.empty() ? "" : "; ") + error;
      return false;
    }
    parents = true;
    return true;
  };
  auto keep_if_linked = [&](size_t bytes, const std::string& from) {
    written_.push_back(out);
    p.ids = SplitIds(out);
    const bool linked = std::find(p.ids.begin(), p.ids.end(), id) != p.ids.end();
    const bool fits = copied_bytes_.load(std::memory_order_relaxed) + bytes <= kMaxCopiedBytes;
    if (linked && fits) {
      copied_bytes_.fetch_add(bytes, std::memory_order_relaxed);
      return true;
    }
    Forget(out);
    p.ids.clear();
    p.notes += (p.notes.empty() ? "" : "; ") + from +
               (linked ? ": not read: this module's copies of split units would pass " +
                             std::to_string(kMaxCopiedBytes) + " bytes"
                       : std::string(": no split unit with the skeleton's dwo id"));
    return false;
  };
  // A package's unit wins over a .dwo, as in llvm-symbolizer (a package is made from the
  // build's .dwo files; those left behind may be older).
  if (dwp_ != nullptr) {
    size_t written = 0;
    if (!make_parents()) return p;
    if (dwp_->WriteUnit(id, out, &written, &error)) {
      if (keep_if_linked(written, dwp_->path())) return p;
    } else {
      p.notes += (p.notes.empty() ? "" : "; ") + dwp_->path() + ": " + error;
    }
  }
  std::string absent;
  for (const std::string& c : candidates) {
    std::string bytes, note;
    if (!ReadDwo(c, &bytes, &note)) {
      if (note.empty()) {
        absent += (absent.empty() ? "no " : " nor ") + c;
      } else {
        p.notes += (p.notes.empty() ? "" : "; ") + note;
      }
      continue;
    }
    if (!make_parents()) return p;
    if (!WriteAll(out, bytes, &error)) {
      p.notes += (p.notes.empty() ? "" : "; ") + error;
      continue;
    }
    if (keep_if_linked(bytes.size(), c)) return p;
  }
  if (dwp_ == nullptr) {
    absent += (absent.empty() ? "no " : " nor ") + binary_ + ".dwp";
    if (!dwp_note_.empty()) absent += " (unreadable: see the log)";
  }
  p.notes = absent + (absent.empty() || p.notes.empty() ? "" : "; ") + p.notes;
  return p;
}

SplitUnit SplitUnits::Find(Dwarf_Die* skeleton) {
  SplitUnit out;
  const char* dwo_name = AttrString(skeleton, DW_AT_dwo_name);
  if (dwo_name == nullptr) dwo_name = AttrString(skeleton, DW_AT_GNU_dwo_name);
  const char* comp_dir = AttrString(skeleton, DW_AT_comp_dir);
  const char* source = AttrString(skeleton, DW_AT_name);
  uint64_t dwo_id = 0;
  dwarf_cu_info(skeleton->cu, nullptr, nullptr, nullptr, nullptr, &dwo_id, nullptr, nullptr);
  char id_text[32];
  std::snprintf(id_text, sizeof(id_text), "0x%016" PRIx64, dwo_id);
  const std::string what = source != nullptr && source[0] != '\0'
                               ? std::string("the split DWARF of ") + source + ", dwo id " + id_text
                               : std::string("dwo id ") + id_text;
  if (dwo_name == nullptr || dwo_name[0] == '\0') {
    out.missing = skeleton_file_ + ": a skeleton unit without DW_AT_dwo_name (" + what + ")";
    return out;
  }
  const std::string_view name(dwo_name);
  if (name.front() == '/') {
    // libdw opens an absolute name as it is: only a file root alone can change.
    std::string why;
    struct stat st {};
    if (!PathOwnerCannotChange(dwo_name, &why)) {
      out.missing = std::string(dwo_name) + " not read: " + why +
                    " (an absolute dwo name is read only where no user can change it; " + what +
                    ")";
      return out;
    }
    bool served = false;
    if (!Files().stat(dwo_name, true, &st, &served) || !S_ISREG(st.st_mode)) {
      out.missing = std::string(dwo_name) + " is not a regular file: not read (" + what + ")";
      return out;
    }
  } else if (!SafeRelativeName(name)) {
    out.missing = "the dwo name '" + std::string(name) +
                  "' is not read: it leaves its directory ('..', an empty part) (" + what + ")";
    return out;
  } else {
    bool linkable = false;
    {
      std::lock_guard lock(mu_);
      auto it = placed_.find(std::string(name));
      if (it == placed_.end()) {
        it = placed_
                 .emplace(std::string(name),
                          Place(name, dwo_id,
                                DwoCandidates(binary_dir_, skeleton_dir_,
                                              comp_dir != nullptr ? comp_dir : "", name)))
                 .first;
      }
      const Placed& p = it->second;
      linkable = std::find(p.ids.begin(), p.ids.end(), dwo_id) != p.ids.end();
      if (!linkable) {
        out.missing = (p.notes.empty() ? std::string("no split unit for ") + dwo_name : p.notes) +
                      " (" + what + ")";
        return out;
      }
    }
  }
  // libdw now finds <its debugdir>/<dwo_name>, the copy placed there (or the absolute name).
  Dwarf_Die split;
  if (dwarf_cu_info(skeleton->cu, nullptr, nullptr, nullptr, &split, nullptr, nullptr, nullptr) ==
          0 &&
      split.addr != nullptr && dwarf_tag(&split) == DW_TAG_compile_unit) {
    out.found = true;
    out.die = split;
    return out;
  }
  out.missing = std::string(dwo_name) + ": libdw did not link the split unit (" + what + ")";
  return out;
}

}  // namespace jitsym::native
