// Finding and checking separate debug files, and reading MiniDebugInfo (debug_file_locator.h).
#include "daemon/native/debug_file_locator.h"

#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "daemon/native/file_ops.h"
#include "daemon/util/log.h"

namespace jitsym::native {
namespace {

constexpr size_t kMaxMiniDebugInfo = 256u << 20;  // decompressed .gnu_debugdata

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

uint32_t FileCrc(int fd) {
  uLong crc = crc32(0, nullptr, 0);
  char buf[1 << 16];
  off_t pos = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof(buf), pos);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buf), static_cast<uInt>(n));
    pos += n;
  }
  return static_cast<uint32_t>(crc);
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  bool served = false;
  return Files().stat(a, true, &sa, &served) && Files().stat(b, true, &sb, &served) &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// Whether `path` names something (not asked of a FUSE server by the daemon's own thread).
bool Exists(const std::string& path) {
  struct stat st {};
  bool served = false;
  return Files().stat(path, true, &st, &served);
}

}  // namespace

std::optional<DebugLink> ReadDebugLink(Elf* elf) {
  Elf_Scn* scn = FindSection(elf, ".gnu_debuglink");
  Elf_Data* d = scn ? SectionData(scn) : nullptr;
  if (d == nullptr || d->d_size == 0) return std::nullopt;
  const char* p = static_cast<const char*>(d->d_buf);
  const size_t len = strnlen(p, d->d_size);
  if (len >= d->d_size || len == 0 || std::memchr(p, '/', len) != nullptr) return std::nullopt;
  DebugLink link;
  link.name.assign(p, len);
  const size_t crc_off = (len + 4) & ~size_t{3};
  if (crc_off + 4 <= d->d_size) {
    uint32_t crc;
    std::memcpy(&crc, p + crc_off, 4);
    link.crc = crc;
  }
  return link;
}

std::vector<DebugCandidate> DebugFileCandidates(const std::string& binary_path,
                                                const std::string& build_id, const DebugLink* link,
                                                const DebugSearch& search) {
  std::vector<DebugCandidate> candidates;
  if (build_id.size() > 2) {
    for (const std::string& dir : search.debug_dirs) {
      candidates.push_back(
          {dir + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug"});
    }
  }
  for (const std::string& f : search.extra_files) candidates.push_back({f, false, true});
  if (link != nullptr && !link->name.empty()) {
    const std::string dir = DirName(binary_path);
    candidates.push_back({dir + "/" + link->name, true});
    candidates.push_back({dir + "/.debug/" + link->name, true});
    for (const std::string& d : search.debug_dirs) {
      candidates.push_back({d + dir + "/" + link->name, true});
    }
  }
  return candidates;
}

bool CompanionOwnerAllowed(uint32_t file_owner, uint32_t owner, std::string* why) {
  if (file_owner == 0 || file_owner == owner) return true;
  if (why != nullptr) {
    *why = "owned by uid " + std::to_string(file_owner) +
           ", neither root nor the binary's owner (uid " + std::to_string(owner) + ")";
  }
  return false;
}

OpenedElf OpenDebugFile(const std::string& binary_path, Elf* binary, uint32_t owner,
                        const std::string& build_id, const DebugSearch& search,
                        std::string* found) {
  const std::optional<DebugLink> link = ReadDebugLink(binary);
  for (const DebugCandidate& c :
       DebugFileCandidates(binary_path, build_id, link ? &*link : nullptr, search)) {
    if (!Exists(c.path) || SameFile(c.path, binary_path)) continue;
    OpenedElf d = OpenElf(c.path, nullptr, ElfRead::kMap);
    if (d.elf == nullptr) continue;
    // The file opened (through any link), not the path: another user's is not read for this one.
    struct stat st {};
    std::string why;
    if (::fstat(d.fd, &st) != 0 || (!c.fetched && !CompanionOwnerAllowed(st.st_uid, owner, &why))) {
      JITSYM_LOG(kInfo, c.path, ": debug file of ", binary_path, " not read: ", why);
      d.Close();
      continue;
    }
    // A debug file must belong to this binary: same build-id, or (debuglink without build-id)
    // the CRC the binary recorded.
    const std::string id = HexBuildId(ReadBuildId(d.elf));
    const bool ok = !build_id.empty()
                        ? id == build_id
                        : (c.from_debuglink && (!link->crc || FileCrc(d.fd) == *link->crc));
    if (!ok || !HasDwarf(d.elf)) {
      if (!ok) JITSYM_LOG(kInfo, c.path, ": debug file does not match ", binary_path, "; ignored");
      d.Close();
      continue;
    }
    *found = c.path;
    return d;
  }
  return {};
}

std::optional<std::string> ReadMiniDebugInfo(Elf* elf, const std::string& path) {
  Elf_Scn* scn = FindSection(elf, ".gnu_debugdata");
  Elf_Data* data = scn ? SectionData(scn) : nullptr;
  if (data == nullptr || data->d_size == 0) return std::nullopt;
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, 1ull << 30, 0) != LZMA_OK) return std::nullopt;
  strm.next_in = static_cast<const uint8_t*>(data->d_buf);
  strm.avail_in = data->d_size;
  std::string out;
  lzma_ret ret = LZMA_OK;
  while (ret == LZMA_OK) {
    if (out.size() >= kMaxMiniDebugInfo) break;
    const size_t old = out.size();
    out.resize(old + (1 << 16));
    strm.next_out = reinterpret_cast<uint8_t*>(out.data() + old);
    strm.avail_out = 1 << 16;
    ret = lzma_code(&strm, LZMA_FINISH);
    out.resize(out.size() - strm.avail_out);
  }
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END) {
    JITSYM_LOG(kWarning, path, ": .gnu_debugdata: cannot decompress (xz error ", ret, ")");
    return std::nullopt;
  }
  return out;
}

}  // namespace jitsym::native
