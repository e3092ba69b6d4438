// The gperftools legacy CPU profile (what libprofiler.so writes for CPUPROFILE=FILE): a pure
// parser (bytes in, samples and mappings out) and a writer for the symbolized form pprof reads.
// Spec: gperftools docs/cpuprofile-fileformat.html.
//
//   profile := header record* trailer maps_text
//   header  := 0, 3, 0 (version), PERIOD_US, 0          (slots)
//   record  := COUNT, N, PC[N]                            (PC[0] the sampled pc, then callers'
//                                                          return addresses, leaf first)
//   trailer := 0, 1, 0
//   maps_text := /proc/self/maps lines: START-END PERMS OFFSET DEV INODE [PATH]
//
// A slot is a machine word of the profiled process: 32 or 64 bits, in its byte order. Both are
// decided once from the header (slot 0 is 0, slot 1 is 3) and every slot is read in host order
// from then on.
//
//   symbolized := "--- symbol\n" "binary=" PATH "\n" ("0x" HEX " " NAME ("--" NAME)* "\n")* "---\n"
//                 "--- profile\n" profile       (caller pcs already minus 1: pprof does not
//                                                subtract again when it reads this form)
#ifndef JITSYM_CLIENT_GPERFTOOLS_PROFILE_H_
#define JITSYM_CLIENT_GPERFTOOLS_PROFILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/util/result.h"

namespace jitsym::client {

struct ProfileMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;  // file offset of start
  std::string perms;
  std::string path;  // empty for anonymous mappings
};

struct CpuProfile {
  int slot_bytes = 8;  // 4 or 8
  bool big_endian = false;
  uint64_t period_us = 0;
  struct Sample {
    uint64_t count = 0;
    uint32_t first = 0;  // index into pcs
    uint32_t depth = 0;
  };
  std::vector<Sample> samples;
  std::vector<uint64_t> pcs;  // every sample's pcs, leaf first, as recorded
  std::vector<ProfileMapping> mappings;
  std::string_view maps_text;  // the text after the trailer (points into the parsed bytes)

  // The pcs of sample i.
  const uint64_t* pcs_of(const Sample& s) const { return pcs.data() + s.first; }
  // The mapping containing pc, or nullptr.
  const ProfileMapping* FindMapping(uint64_t pc) const;
};

// Parses a whole profile. Limits: at most `max_pcs` pcs in all (memory bound), stack depth at
// most 2^16 (as pprof). A failure is kNotThisFormat (the bytes do not start like a CPU profile),
// kUnsupported (another version), kMalformed or kLimit, with the offset of the record at fault.
// The profile points into `bytes` (maps_text), which must outlive it.
Result<CpuProfile> ParseCpuProfile(std::string_view bytes, size_t max_pcs = size_t{1} << 28);

// /proc/self/maps lines; lines that do not parse are skipped.
std::vector<ProfileMapping> ParseMapsText(std::string_view text);

// The binary profile again (same slot size and byte order), with every caller pc (not the leaf)
// minus 1, as the symbolized form wants, followed by the maps text.
std::string WriteCpuProfileWithCallerPcsAdjusted(const CpuProfile& profile);

// The symbolized form: symbol section (names keyed by the adjusted pcs; each pc's functions
// outermost first, the inlined ones after it, joined by "--" as pprof expects), then the profile.
std::string WriteSymbolizedProfile(const CpuProfile& profile, std::string_view binary,
                                   const std::map<uint64_t, std::vector<std::string>>& names);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_GPERFTOOLS_PROFILE_H_
