// The one bounds-checked reader (daemon/util/byte_reader.h), by itself: byte order, LEB128 on both
// paths, strings, sticky failure, sizes from hostile input that would overflow a position.
#include "daemon/util/byte_reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "tests/unit/testing/mlpd_builder.h"

namespace jitsym {
namespace {

using testing::PutSleb;
using testing::PutUleb;

constexpr ByteOrder kLe = ByteOrder::kLittle;

// Values around every 7-bit boundary, read both on the fast path (padding after them) and on
// the byte-by-byte path (the value ends the buffer).
TEST(ByteReader, LebRoundTripsOnBothPaths) {
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
      ByteReader ru(u, kLe), rs(s, kLe);
      EXPECT_EQ(ru.Uleb(), v) << v << " pad " << pad;
      EXPECT_EQ(rs.Sleb(), static_cast<int64_t>(v)) << v << " pad " << pad;
      EXPECT_TRUE(ru.ok() && rs.ok());
      EXPECT_EQ(ru.cursor(), u.data() + u.size() - pad);
      EXPECT_EQ(rs.cursor(), s.data() + s.size() - pad);
    }
  }
}

TEST(ByteReader, NegativeSleb) {
  for (int64_t v : {int64_t{-1}, int64_t{-64}, int64_t{-65}, int64_t{-8192},
                    std::numeric_limits<int64_t>::min()}) {
    std::vector<uint8_t> b;
    PutSleb(b, v);
    ByteReader r(b, kLe);
    EXPECT_EQ(r.Sleb(), v);
    EXPECT_TRUE(r.at_end());
  }
}

TEST(ByteReader, LebCutShortFails) {
  const std::vector<uint8_t> b = {0x80, 0x80};
  ByteReader r(b, kLe);
  r.Uleb();
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.at_end());
}

TEST(ByteReader, LebOverTenBytesFailsOnBothPaths) {
  std::vector<uint8_t> b(11, 0x80);
  b.back() = 0x01;
  ByteReader slow(b, kLe);
  slow.Uleb();
  EXPECT_FALSE(slow.ok());
  b.resize(32, 0);
  ByteReader fast(b, kLe);
  fast.Sleb();
  EXPECT_FALSE(fast.ok());
}

TEST(ByteReader, StringNeedsItsNul) {
  const std::vector<uint8_t> b = {'a', 'b', 0, 'c'};
  ByteReader r(b, kLe);
  EXPECT_EQ(r.CString(), "ab");
  EXPECT_EQ(r.CString(), "");
  EXPECT_FALSE(r.ok());
}

TEST(ByteReader, FailureIsSticky) {
  const std::vector<uint8_t> b = {1, 2, 3};
  ByteReader r(b, kLe);
  r.Skip(4);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.U8(), 0);
  EXPECT_EQ(r.Uleb(), 0u);
  EXPECT_FALSE(r.ok());
}

TEST(ByteReader, EmptyIsAtEnd) {
  ByteReader r(std::span<const uint8_t>(), kLe);
  EXPECT_TRUE(r.at_end());
  EXPECT_TRUE(r.ok());
  r.U8();
  EXPECT_FALSE(r.ok());
}

TEST(ByteReader, ByteOrderIsDecidedOnce) {
  const std::vector<uint8_t> b = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                                  0x08, 0x11, 0x12, 0x13, 0x14, 0x21, 0x22};
  ByteReader le(b, ByteOrder::kLittle), be(b, ByteOrder::kBig);
  EXPECT_EQ(le.U64(), 0x0807060504030201u);
  EXPECT_EQ(be.U64(), 0x0102030405060708u);
  EXPECT_EQ(le.U32(), 0x14131211u);
  EXPECT_EQ(be.U32(), 0x11121314u);
  EXPECT_EQ(le.U16(), 0x2221u);
  EXPECT_EQ(be.U16(), 0x2122u);
  EXPECT_TRUE(le.ok() && be.ok() && le.at_end() && be.at_end());
  EXPECT_EQ(le.pos(), b.size());
}

TEST(ByteReader, WordOfAnySizeInEitherOrder) {
  const std::vector<uint8_t> b = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  for (size_t n = 1; n <= 8; ++n) {
    uint64_t want_be = 0, want_le = 0;
    for (size_t i = 0; i < n; ++i) {
      want_be = (want_be << 8) | b[i];
      want_le |= uint64_t{b[i]} << (8 * i);
    }
    ByteReader le(b, ByteOrder::kLittle), be(b, ByteOrder::kBig);
    EXPECT_EQ(le.Word(n), want_le) << n;
    EXPECT_EQ(be.Word(n), want_be) << n;
    EXPECT_EQ(le.pos(), n);
    EXPECT_TRUE(le.ok() && be.ok());
  }
  ByteReader r(b, ByteOrder::kLittle);
  r.Word(9);
  EXPECT_FALSE(r.ok());
}

TEST(ByteReader, ReadPastTheEndFailsAndReturnsZero) {
  const std::vector<uint8_t> b = {1, 2, 3};
  ByteReader r(b, ByteOrder::kLittle);
  EXPECT_EQ(r.U16(), 0x0201u);
  EXPECT_EQ(r.U32(), 0u);  // 1 byte left
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(r.remaining(), 0u);
}

// Sizes taken from hostile input: none may wrap the position around.
TEST(ByteReader, HugeSizesFailWithoutOverflow) {
  const std::vector<uint8_t> b(16, 0);
  for (size_t n : {size_t{17}, SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 2 + 1}) {
    ByteReader r(b, ByteOrder::kLittle);
    r.U8();
    r.Skip(n);
    EXPECT_FALSE(r.ok()) << n;
    ByteReader q(b, ByteOrder::kLittle);
    q.U8();
    EXPECT_TRUE(q.Bytes(n).empty());
    EXPECT_FALSE(q.ok()) << n;
  }
  ByteReader r(b, ByteOrder::kLittle);
  EXPECT_EQ(r.Bytes(16).size(), 16u);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(CheckedAdd(UINT64_MAX, 1), std::nullopt);
  EXPECT_EQ(CheckedAdd(1, 2), 3u);
  EXPECT_EQ(CheckedMul(uint64_t{1} << 32, uint64_t{1} << 32), std::nullopt);
  EXPECT_EQ(CheckedMul(3, 4), 12u);
}

TEST(ByteReader, FailIsForParsersThatRejectAValue) {
  const std::vector<uint8_t> b = {1, 2, 3, 4};
  ByteReader r(b, ByteOrder::kLittle);
  r.U8();
  r.Fail();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.U8(), 0);
}

TEST(ByteReader, ReadsFromAStringView) {
  ByteReader r(std::string_view("\x03\x00\x00\x00xy\0", 7), ByteOrder::kLittle);
  EXPECT_EQ(r.U32(), 3u);
  EXPECT_EQ(r.CString(), "xy");
  EXPECT_TRUE(r.ok() && r.at_end());
}

}  // namespace
}  // namespace jitsym
