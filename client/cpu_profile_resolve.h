// A gperftools CPU profile's pcs named through jitsymd: what `jitsym pprof` and `jitsym
// flamegraph --pprof-profile` share. Every pc is resolved once (callers' return addresses minus
// 1, as pprof does): pcs in a file the profile's own mapping list names are native code, asked
// as (file, file offset) ELF image lookups; the rest (anonymous memory: JIT code) by pid, as of
// the latest code (the format has no sample times).
#ifndef JITSYM_CLIENT_CPU_PROFILE_RESOLVE_H_
#define JITSYM_CLIENT_CPU_PROFILE_RESOLVE_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/frame_summary.h"
#include "client/gperftools_profile.h"
#include "client/pc_resolver.h"
#include "daemon/util/result.h"

namespace jitsym::client {

// The whole file (at most 4 GiB); a failure's message is for "cannot read PATH: MESSAGE".
Result<std::string> ReadWholeFile(const std::string& path);

// The pc pprof resolves for entry k of a sample's pcs: the leaf as recorded, callers minus 1.
inline uint64_t ResolvedPc(const uint64_t* pcs, uint32_t k) {
  return k == 0 || pcs[k] == 0 ? pcs[k] : pcs[k] - 1;
}

struct ResolvedPcs {
  std::vector<uint64_t> pcs;                    // every distinct resolved pc, sorted
  std::unordered_map<uint64_t, NamedPc> named;  // the named ones
  std::vector<ProfileMapping> maps;             // the profile's, sorted by start
  size_t jit_pcs = 0;                           // pcs outside the profile's files
  bool any_file_pcs = false;
  FrameSummary jit, files;  // answers by pid, and by file

  // The mapping containing pc, or nullptr.
  const ProfileMapping* MappingOf(uint64_t pc) const;
};

// Names every pc of `profile` it can. False when the connection failed (said on stderr).
bool ResolveCpuProfile(const CpuProfile& profile, int64_t pid, PcResolver* resolver,
                       ResolvedPcs* out);

// The summary on stderr ("jitsym COMMAND: ..."): a warning naming the pid when none of its JIT
// pcs was named, then the pcs named per origin and left unknown per reason.
void ReportResolveSummary(const char* command, int64_t pid, const ResolvedPcs& resolved);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_CPU_PROFILE_RESOLVE_H_
