// Reads namespace, thread and open-file facts from /proc (see namespaces.h).
#include "daemon/os/namespaces.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "daemon/os/guarded_fs.h"
#include "daemon/os/process_maps.h"
#include "daemon/os/small_file.h"

namespace jitsym::os {
namespace {

std::string ProcPath(uint32_t pid, const char* rest) {
  return "/proc/" + std::to_string(pid) + rest;
}

// Whitespace-separated decimal numbers; false if any is malformed.
bool ParseNumbers(std::string_view text, std::vector<uint32_t>* out) {
  out->clear();
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i == text.size()) break;
    uint32_t value = 0;
    auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (ec != std::errc() || end == text.data() + i) return false;
    out->push_back(value);
    i = static_cast<size_t>(end - text.data());
  }
  return true;
}

uint64_t NamespaceInode(uint32_t pid, const char* which) {
  struct stat st {};
  const std::string path = ProcPath(pid, "/ns/") + which;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// The decimal names in a /proc directory, at most `limit`.
std::vector<uint32_t> NumericEntries(const std::string& dir, size_t limit) {
  std::vector<uint32_t> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    if (out.size() >= limit) break;
    uint32_t value = 0;
    const char* name = e->d_name;
    const char* end = name + std::strlen(name);
    auto [p, ec] = std::from_chars(name, end, value);
    if (ec == std::errc() && p == end && p != name) out.push_back(value);
  }
  ::closedir(d);
  return out;
}

}  // namespace

std::optional<ProcessStatus> ParseStatus(std::string_view text) {
  ProcessStatus status;
  bool have_tgid = false, have_uid = false;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 1);
    std::vector<uint32_t> numbers;
    if (key == "Tgid") {
      have_tgid = ParseNumbers(value, &numbers) && numbers.size() == 1;
      if (have_tgid) status.tgid = numbers[0];
    } else if (key == "Uid") {
      // real, effective, saved, filesystem
      have_uid = ParseNumbers(value, &numbers) && !numbers.empty();
      if (have_uid) status.uid = numbers[0];
    } else if (key == "NSpid") {
      if (!ParseNumbers(value, &status.nspid)) status.nspid.clear();
    } else if (key == "NStgid") {
      if (!ParseNumbers(value, &status.nstgid)) status.nstgid.clear();
    }
  }
  if (!have_tgid || !have_uid) return std::nullopt;
  return status;
}

std::string ParseCgroupV2(std::string_view text) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.starts_with("0::")) return std::string(line.substr(3));
  }
  return {};
}

namespace {

constexpr size_t kStatusBytes = 64 << 10;

std::optional<ProcessStatus> ReadStatus(uint32_t pid) {
  SmallFileOptions options;
  options.max_bytes = kStatusBytes;
  auto file = ReadSmallFile(ProcPath(pid, "/status"), options);
  if (!file) return std::nullopt;
  return ParseStatus(file->bytes);
}

}  // namespace

std::optional<NamespaceFacts> ReadNamespaceFacts(uint32_t pid) {
  auto status = ReadStatus(pid);
  if (!status) return std::nullopt;
  NamespaceFacts facts;
  facts.tgid = status->tgid;
  facts.uid = status->uid;
  // Kernels before 4.1 have no NStgid: the pid is the same in every namespace we can see.
  facts.nspid = !status->nstgid.empty() ? status->nstgid.back() : status->tgid;
  facts.ns_depth = status->nstgid.empty() ? 1 : static_cast<uint32_t>(status->nstgid.size());
  facts.pid_ns = NamespaceInode(pid, "pid");
  facts.mnt_ns = NamespaceInode(pid, "mnt");
  facts.user_ns = NamespaceInode(pid, "user");
  SmallFileOptions options;
  options.max_bytes = kStatusBytes;
  if (auto cgroup = ReadSmallFile(ProcPath(pid, "/cgroup"), options)) {
    facts.cgroup = ParseCgroupV2(cgroup->bytes);
  }
  return facts;
}

const NamespaceFacts& SelfNamespaces() {
  static const NamespaceFacts self = [] {
    auto facts = ReadNamespaceFacts(static_cast<uint32_t>(::getpid()));
    return facts ? *facts : NamespaceFacts{};
  }();
  return self;
}

std::vector<uint32_t> ListThreads(uint32_t pid, size_t limit) {
  std::vector<uint32_t> tids = NumericEntries(ProcPath(pid, "/task"), limit);
  std::sort(tids.begin(), tids.end());
  return tids;
}

std::optional<uint32_t> ThreadGroupOf(uint32_t tid) {
  auto status = ReadStatus(tid);
  if (!status) return std::nullopt;
  return status->tgid;
}

std::vector<MarkerMapping> JitdumpMappings(std::string_view maps) {
  std::vector<MarkerMapping> out;
  for (const Mapping& m : ParseProcessMaps(maps)) {
    const size_t slash = m.path.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string_view name = std::string_view(m.path).substr(slash + 1);
    // jit-<digits>.dump, the name perf looks for in the mmap record.
    if (!name.starts_with("jit-") || !name.ends_with(".dump") || name.size() <= 9) continue;
    const std::string_view digits = name.substr(4, name.size() - 9);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const bool seen = std::any_of(out.begin(), out.end(), [&](const MarkerMapping& o) {
      return o.dev == m.dev && o.ino == m.inode;
    });
    if (seen) continue;
    out.push_back({m.start, m.end, m.dev, m.inode, m.path});
  }
  return out;
}

bool MapsFile(uint32_t pid, uint64_t dev, uint64_t ino) {
  auto maps = ReadProcessMaps(pid);
  if (!maps) return false;
  return std::any_of(maps->begin(), maps->end(),
                     [&](const Mapping& m) { return m.dev == dev && m.inode == ino; });
}

bool HoldsOpen(uint32_t pid, uint64_t dev, uint64_t ino) {
  const std::string dir = ProcPath(pid, "/fd");
  // A process may hold very many descriptors; a bounded look is enough for side files, which
  // runtimes open early.
  for (uint32_t fd : NumericEntries(dir, 1 << 16)) {
    // Not stat(2): a descriptor of a FUSE file would make it ask the server (guarded_fs.h).
    if (LinkLeadsTo(dir + "/" + std::to_string(fd), dev, ino)) return true;
  }
  return false;
}

}  // namespace jitsym::os
