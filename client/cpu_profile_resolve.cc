// Naming a gperftools CPU profile's pcs (see cpu_profile_resolve.h).
#include "client/cpu_profile_resolve.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

namespace jitsym::client {

namespace {
constexpr size_t kMaxProfileBytes = size_t{4} << 30;
}  // namespace

Result<std::string> ReadWholeFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return MakeError(ErrorKind::kIo, std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    out.append(buf, n);
    if (out.size() > kMaxProfileBytes) {
      std::fclose(f);
      return MakeError(ErrorKind::kLimit, "larger than 4 GiB");
    }
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return MakeError(ErrorKind::kIo, "read error");
  return out;
}

const ProfileMapping* ResolvedPcs::MappingOf(uint64_t pc) const {
  auto it = std::upper_bound(maps.begin(), maps.end(), pc,
                             [](uint64_t a, const ProfileMapping& m) { return a < m.start; });
  if (it == maps.begin()) return nullptr;
  --it;
  return pc < it->end ? &*it : nullptr;
}

bool ResolveCpuProfile(const CpuProfile& profile, int64_t pid, PcResolver* resolver,
                       ResolvedPcs* out) {
  for (const auto& s : profile.samples) {
    const uint64_t* p = profile.pcs_of(s);
    for (uint32_t k = 0; k < s.depth; ++k) out->pcs.push_back(ResolvedPc(p, k));
  }
  std::sort(out->pcs.begin(), out->pcs.end());
  out->pcs.erase(std::unique(out->pcs.begin(), out->pcs.end()), out->pcs.end());
  out->maps = profile.mappings;
  std::sort(out->maps.begin(), out->maps.end(),
            [](const ProfileMapping& a, const ProfileMapping& b) { return a.start < b.start; });
  std::vector<uint64_t> jit;                           // by pid
  std::map<std::string, std::vector<uint64_t>> files;  // by file: pcs
  for (uint64_t pc : out->pcs) {
    const ProfileMapping* m = out->MappingOf(pc);
    if (m != nullptr && IsNativeFile(m->path)) {
      files[m->path].push_back(pc);
    } else {
      jit.push_back(pc);
    }
  }
  out->jit_pcs = jit.size();
  out->any_file_pcs = !files.empty();
  proto::LookupRequest by_pid;
  by_pid.pid = pid;
  if (!resolver->Ask(
          by_pid, jit,
          [&](size_t i, const proto::LookupResult& r) { out->named[jit[i]] = NamePc(r); },
          &out->jit)) {
    return false;
  }
  for (const auto& entry : files) {
    const auto& file_pcs = entry.second;
    proto::LookupRequest by_image;
    by_image.image = entry.first;
    by_image.file_offset = true;
    std::vector<uint64_t> offsets;
    for (uint64_t pc : file_pcs) {
      const ProfileMapping* m = out->MappingOf(pc);
      offsets.push_back(pc - m->start + m->offset);
    }
    if (!resolver->Ask(
            by_image, offsets,
            [&](size_t i, const proto::LookupResult& r) { out->named[file_pcs[i]] = NamePc(r); },
            &out->files)) {
      return false;
    }
  }
  return true;
}

void ReportResolveSummary(const char* command, int64_t pid, const ResolvedPcs& r) {
  const auto p = static_cast<long long>(pid);
  // The pcs outside the profile's files are the process's JIT code: when none of them is
  // named, the likeliest cause is a process jitsymd knows nothing about; say so, with the pid.
  if (r.jit.unknown(kUnknownProcessKey) > 0) {
    std::fprintf(stderr,
                 "jitsym %s: warning: jitsymd knows nothing about pid %lld: its JIT code "
                 "stays unnamed (`jitsym processes` lists the processes it knows)\n",
                 command, p);
  } else if (r.jit.unknown("permission_denied") > 0) {
    std::fprintf(stderr,
                 "jitsym %s: warning: pid %lld: permission denied; its JIT code stays unnamed\n",
                 command, p);
  } else if (r.jit_pcs > 0 && r.jit.named() == 0) {
    std::fprintf(stderr,
                 "jitsym %s: warning: none of the %zu pcs outside the profile's files was "
                 "named for pid %lld: is it the profiled process, and does jitsymd know it "
                 "(`jitsym processes`)?\n",
                 command, r.jit_pcs, p);
  }
  std::fputs(r.jit.Format(command, "JIT pcs (by pid)").c_str(), stderr);
  if (r.any_file_pcs) std::fputs(r.files.Format(command, "pcs in files").c_str(), stderr);
}

}  // namespace jitsym::client
