// The summary annotate and pprof print on stderr, and the key a miss is counted under.
#include "client/frame_summary.h"

#include <gtest/gtest.h>

namespace jitsym::client {
namespace {

TEST(FrameSummary, NamedPerOriginUnknownPerReason) {
  FrameSummary s;
  proto::LookupResult hit;
  hit.found = true;
  hit.origin = proto::Origin::kJitdump;
  s.Named(hit);
  s.Named(hit);
  proto::LookupResult miss;
  s.Unknown(miss);
  proto::LookupResult denied;
  denied.error = "permission denied";
  s.Unknown(denied);
  s.Unknown(std::string(kNoPidKey));
  EXPECT_EQ(s.named(), 2u);
  EXPECT_EQ(s.unknown(), 3u);
  EXPECT_EQ(s.unknown(kNoPidKey), 1u);
  EXPECT_EQ(s.Format("annotate", "frames"),
            "jitsym annotate: summary: 5 frames to name, 2 named, 3 left unknown\n"
            "  named by jitdump: 2\n"
            "  left unknown, reason no_pid (no pid or tid in the input: nobody to ask): 1\n"
            "  left unknown, reason permission denied: 1\n"
            "  left unknown, reason unknown: 1\n");
}

// Until results carry a reason code, a miss without an error is "unknown".
TEST(FrameSummary, UnknownKeyOfAPlainMiss) {
  proto::LookupResult miss;
  EXPECT_EQ(UnknownKey(miss), "unknown");
}

}  // namespace
}  // namespace jitsym::client
