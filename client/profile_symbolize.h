// Fills in the names of a profile.proto's unsymbolized locations through jitsymd: the
// "symbolize the JIT frames of a pprof profile" step a profile needs before it leaves the host
// whose daemon knows the JIT names. Locations in a mapping of a file are native code, asked as
// ELF image lookups by file offset; the rest (anonymous memory: JIT code) by the sample's pid
// (its `pid` label, else the --pid given), as of the latest code (profile.proto samples carry no
// time). A location shared by samples of several processes is split into one per process, since
// the same JIT address holds different code in each. Locations that already have functions are
// left as they are.
#ifndef JITSYM_CLIENT_PROFILE_SYMBOLIZE_H_
#define JITSYM_CLIENT_PROFILE_SYMBOLIZE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "client/frame_summary.h"
#include "client/pc_resolver.h"
#include "client/profile_proto.h"

namespace jitsym::client {

struct SymbolizeCounts {
  uint64_t no_pid = 0;        // JIT locations used by samples without a pid (and no --pid)
  std::vector<int64_t> pids;  // the processes asked about, ascending
};

// Names what it can in *profile (which must have passed pprof::Validate). JIT pcs are counted in
// *jit, pcs in files in *files. False when the connection failed (said on stderr).
bool SymbolizeProfile(pprof::Profile* profile, std::optional<int64_t> default_pid,
                      PcResolver* resolver, FrameSummary* jit, FrameSummary* files,
                      SymbolizeCounts* counts);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_PROFILE_SYMBOLIZE_H_
