// The gperftools CPU profile parser on profiles built here slot by slot (both byte orders, 32-
// and 64-bit slots), on every truncation of a good one, and on garbage.
#include "client/gperftools_profile.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace jitsym::client {
namespace {

// Builds a legacy CPU profile: slots of `bytes` bytes in the given byte order.
class ProfileBuilder {
 public:
  ProfileBuilder(int bytes, bool big_endian) : bytes_(bytes), big_endian_(big_endian) {}
  ProfileBuilder& Slot(uint64_t v) {
    for (int i = 0; i < bytes_; ++i) {
      const int shift = 8 * (big_endian_ ? bytes_ - 1 - i : i);
      out_.push_back(static_cast<char>((v >> shift) & 0xff));
    }
    return *this;
  }
  ProfileBuilder& Header(uint64_t period_us) {
    return Slot(0).Slot(3).Slot(0).Slot(period_us).Slot(0);
  }
  ProfileBuilder& Sample(uint64_t count, const std::vector<uint64_t>& pcs) {
    Slot(count).Slot(pcs.size());
    for (uint64_t pc : pcs) Slot(pc);
    return *this;
  }
  ProfileBuilder& Trailer() { return Slot(0).Slot(1).Slot(0); }
  ProfileBuilder& Text(std::string_view t) {
    out_.append(t);
    return *this;
  }
  const std::string& bytes() const { return out_; }

 private:
  int bytes_;
  bool big_endian_;
  std::string out_;
};

constexpr char kMaps[] =
    "00400000-00b6f000 r--p 00000000 08:01 1234 /usr/bin/node\n"
    "00b72000-025fe000 r-xp 00772000 08:01 1234 /usr/bin/node\n"
    "7f0000000000-7f0000100000 rwxp 00000000 00:00 0 \n"
    "garbage line\n";

std::string GoodProfile(int bytes, bool be) {
  const uint64_t jit = bytes == 8 ? 0x7f0000000040 : 0x7f000040;
  ProfileBuilder b(bytes, be);
  b.Header(10000).Sample(3, {jit, 0xb72010, 0xb72100}).Sample(1, {0xb72200}).Trailer().Text(kMaps);
  return b.bytes();
}

class ByLayout : public ::testing::TestWithParam<std::pair<int, bool>> {};

TEST_P(ByLayout, ParsesHeaderSamplesAndMaps) {
  const auto [bytes, be] = GetParam();
  const std::string data = GoodProfile(bytes, be);
  auto p = ParseCpuProfile(data);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->slot_bytes, bytes);
  EXPECT_EQ(p->big_endian, be);
  EXPECT_EQ(p->period_us, 10000u);
  ASSERT_EQ(p->samples.size(), 2u);
  EXPECT_EQ(p->samples[0].count, 3u);
  ASSERT_EQ(p->samples[0].depth, 3u);
  EXPECT_EQ(p->pcs_of(p->samples[0])[1], 0xb72010u);
  EXPECT_EQ(p->pcs_of(p->samples[1])[0], 0xb72200u);
  EXPECT_EQ(p->maps_text, kMaps);
  ASSERT_EQ(p->mappings.size(), 3u);  // the garbage line is skipped
  EXPECT_EQ(p->mappings[1].path, "/usr/bin/node");
  EXPECT_EQ(p->mappings[1].offset, 0x772000u);
  EXPECT_EQ(p->mappings[2].path, "");
  const ProfileMapping* m = p->FindMapping(0xb72010);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->start, 0xb72000u);
  EXPECT_EQ(p->FindMapping(0x10), nullptr);
}

TEST_P(ByLayout, EveryTruncationIsAnErrorWithAnOffset) {
  const auto [bytes, be] = GetParam();
  const std::string data = GoodProfile(bytes, be);
  const size_t binary_end = data.size() - std::string(kMaps).size();
  for (size_t n = 0; n < binary_end; ++n) {
    auto p = ParseCpuProfile(std::string_view(data).substr(0, n));
    ASSERT_FALSE(p) << n;
    EXPECT_FALSE(p.error().message.empty());
    EXPECT_LE(p.error().offset, n);
  }
}

TEST_P(ByLayout, WriterSubtractsOneFromCallersOnly) {
  const auto [bytes, be] = GetParam();
  const std::string profile = GoodProfile(bytes, be);  // the parsed profile points into it
  auto p = ParseCpuProfile(profile);
  ASSERT_TRUE(p);
  const std::string again = WriteCpuProfileWithCallerPcsAdjusted(*p);
  auto q = ParseCpuProfile(again);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->slot_bytes, bytes);
  EXPECT_EQ(q->big_endian, be);
  ASSERT_EQ(q->pcs.size(), p->pcs.size());
  EXPECT_EQ(q->pcs[0], p->pcs[0]);
  EXPECT_EQ(q->pcs[1], p->pcs[1] - 1);
  EXPECT_EQ(q->pcs[2], p->pcs[2] - 1);
  EXPECT_EQ(q->pcs[3], p->pcs[3]);  // the second sample's leaf
  EXPECT_EQ(q->maps_text, p->maps_text);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ByLayout,
                         ::testing::Values(std::make_pair(8, false), std::make_pair(8, true),
                                           std::make_pair(4, false), std::make_pair(4, true)));

TEST(GperftoolsProfile, NotAProfile) {
  const std::string ones(64, '\xff');
  for (std::string_view bytes :
       {std::string_view(), std::string_view("--- symbol\nbinary=/x\n"), std::string_view(ones)}) {
    auto p = ParseCpuProfile(bytes);
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().kind, ErrorKind::kNotThisFormat);
  }
}

TEST(GperftoolsProfile, MalformedRecords) {
  // Version 1.
  ProfileBuilder v(8, false);
  v.Slot(0).Slot(3).Slot(1).Slot(100).Slot(0).Trailer();
  auto r = ParseCpuProfile(v.bytes());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kUnsupported);
  EXPECT_EQ(r.error().offset, 16u);
  // A depth beyond 2^16.
  ProfileBuilder deep(8, false);
  deep.Header(100).Slot(1).Slot(70000).Slot(1).Trailer();
  r = ParseCpuProfile(deep.bytes());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kMalformed);
  EXPECT_EQ(r.error().offset, 40u);
  // A depth larger than what is left.
  ProfileBuilder big(8, false);
  big.Header(100).Slot(1).Slot(1000).Slot(1);
  r = ParseCpuProfile(big.bytes());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().offset, 40u);
  // A zero count that is not the trailer.
  ProfileBuilder zero(8, false);
  zero.Header(100).Slot(0).Slot(2).Slot(5).Slot(6).Trailer();
  EXPECT_FALSE(ParseCpuProfile(zero.bytes()));
  // The memory bound.
  ProfileBuilder many(8, false);
  many.Header(100).Sample(1, {1, 2, 3}).Sample(1, {4, 5}).Trailer();
  r = ParseCpuProfile(many.bytes(), 4);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kLimit);
  EXPECT_TRUE(ParseCpuProfile(many.bytes(), 5));
}

TEST(GperftoolsProfile, EmptyProfileIsValid) {
  ProfileBuilder b(8, false);
  b.Header(100).Trailer();
  auto p = ParseCpuProfile(b.bytes());
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->samples.empty());
  EXPECT_TRUE(p->mappings.empty());
}

TEST(GperftoolsProfile, RandomMutationsNeverCrash) {
  const std::string good = GoodProfile(8, false);
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    std::string data = good;
    for (int e = 0; e < 4; ++e) data[rng() % data.size()] = static_cast<char>(rng());
    auto p = ParseCpuProfile(data);
    if (p) {
      for (const auto& s : p->samples) ASSERT_LE(s.first + s.depth, p->pcs.size());
    }
  }
}

TEST(GperftoolsProfile, SymbolizedForm) {
  const std::string profile = GoodProfile(8, false);  // the parsed profile points into it
  auto p = ParseCpuProfile(profile);
  ASSERT_TRUE(p);
  const std::string out = WriteSymbolizedProfile(
      *p, "/usr/bin/node",
      {{0x7f0000000040, {"JS:*hot --x\nq"}}, {0xb72010, {"outer", "inlined-", "innermost"}}});
  const std::string head =
      "--- symbol\nbinary=/usr/bin/node\n0x0000000000b72010 outer--inlined --innermost\n"
      "0x00007f0000000040 JS:*hot - x q\n---\n--- profile\n";
  ASSERT_EQ(out.substr(0, head.size()), head);
  auto q = ParseCpuProfile(std::string_view(out).substr(head.size()));
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->samples.size(), 2u);
}

}  // namespace
}  // namespace jitsym::client
