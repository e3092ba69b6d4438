// A profile's samples as stacks of printable names, leaf first, with counts: what `jitsym pprof`
// prints (--text, --folded), and for a gperftools profile what `jitsym flamegraph
// --pprof-profile` draws, made the same way for both. Native function names are shortened as pprof
// does (no parameter or template lists, no return type), so that tables compare with pprof's line
// by line; JIT names are kept whole (they are not C++ signatures: V8 puts the script's path, which
// may hold `<` and `(`, in its names).
#ifndef JITSYM_CLIENT_NAMED_STACKS_H_
#define JITSYM_CLIENT_NAMED_STACKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "client/cpu_profile_resolve.h"
#include "client/profile_proto.h"

namespace jitsym::client {

struct NamedStacks {
  std::vector<std::vector<std::string>> stacks;  // per sample, leaf first
  // Parallel to stacks, for the flame graph's colours (gperftools profiles only: a profile.proto
  // does not say what named a frame): the format that named each frame (kElf native code,
  // kJitdump, ...), kUnknown for a pc nobody named.
  std::vector<std::vector<proto::Origin>> origins;
  std::vector<uint64_t> counts;
};

// pprof's ShortFunctionName: no argument types, no template arguments, no leading return type.
std::string ShortFunctionName(std::string name);

// "0x%016x": an unnamed pc, as pprof prints it.
std::string HexPc(uint64_t pc);

// A gperftools profile's samples with the names jitsymd gave (unnamed pcs in hex).
NamedStacks CpuProfileStacks(const CpuProfile& profile, const ResolvedPcs& resolved);

// A profile.proto's samples, counting `value` (an index into its sample types); locations in a
// mapping of a native file get short names, the rest whole names.
NamedStacks ProtoProfileStacks(const pprof::Profile& profile, size_t value);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_NAMED_STACKS_H_
