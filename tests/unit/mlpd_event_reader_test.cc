#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "daemon/formats/mlpd/event_reader.h"
#include "tests/unit/testing/mlpd_builder.h"

namespace jitsym::mlpd {
namespace {

using testing::PutSleb;
using testing::PutUleb;

// Values around every 7-bit boundary, read both on the fast path (padding after them) and on
// the byte-by-byte path (the value ends the buffer).
TEST(MlpdEventReader, LebRoundTripsOnBothPaths) {
  std::vector<uint64_t> values = {
      0, 1, 0x3f, 0x40, 0x7f, 0x80, std::numeric_limits<uint64_t>::max()};
  for (int bits = 7; bits < 64; bits += 7) {
    values.push_back((uint64_t{1} << bits) - 1);
    values.push_back(uint64_t{1} << bits);
  }
  for (uint64_t v : values) {
    for (size_t pad : {size_t{0}, size_t{16}}) {
      std::vector<uint8_t> u, s;
      PutUleb(u, v);
      PutSleb(s, static_cast<int64_t>(v));
      u.resize(u.size() + pad, 0xaa);
      s.resize(s.size() + pad, 0xaa);
      EventReader ru(u), rs(s);
      EXPECT_EQ(ru.Uleb(), v) << v << " pad " << pad;
      EXPECT_EQ(rs.Sleb(), static_cast<int64_t>(v)) << v << " pad " << pad;
      EXPECT_TRUE(ru.ok() && rs.ok());
      EXPECT_EQ(ru.cursor(), u.data() + u.size() - pad);
      EXPECT_EQ(rs.cursor(), s.data() + s.size() - pad);
    }
  }
}

TEST(MlpdEventReader, NegativeSleb) {
  for (int64_t v : {int64_t{-1}, int64_t{-64}, int64_t{-65}, int64_t{-8192},
                    std::numeric_limits<int64_t>::min()}) {
    std::vector<uint8_t> b;
    PutSleb(b, v);
    EventReader r(b);
    EXPECT_EQ(r.Sleb(), v);
    EXPECT_TRUE(r.at_end());
  }
}

TEST(MlpdEventReader, LebCutShortFails) {
  const std::vector<uint8_t> b = {0x80, 0x80};
  EventReader r(b);
  r.Uleb();
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.at_end());
}

TEST(MlpdEventReader, LebOverTenBytesFailsOnBothPaths) {
  std::vector<uint8_t> b(11, 0x80);
  b.back() = 0x01;
  EventReader slow(b);
  slow.Uleb();
  EXPECT_FALSE(slow.ok());
  b.resize(32, 0);
  EventReader fast(b);
  fast.Sleb();
  EXPECT_FALSE(fast.ok());
}

TEST(MlpdEventReader, StringNeedsItsNul) {
  const std::vector<uint8_t> b = {'a', 'b', 0, 'c'};
  EventReader r(b);
  EXPECT_EQ(r.String(), "ab");
  EXPECT_EQ(r.String(), "");
  EXPECT_FALSE(r.ok());
}

TEST(MlpdEventReader, FailureIsSticky) {
  const std::vector<uint8_t> b = {1, 2, 3};
  EventReader r(b);
  r.Skip(4);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.Byte(), 0);
  EXPECT_EQ(r.Uleb(), 0u);
  EXPECT_FALSE(r.ok());
}

TEST(MlpdEventReader, EmptyIsAtEnd) {
  EventReader r({});
  EXPECT_TRUE(r.at_end());
  EXPECT_TRUE(r.ok());
  r.Byte();
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace jitsym::mlpd
