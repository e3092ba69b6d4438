// The error convention (daemon/util/result.h) by itself: a Result holds a value or an Error,
// converts from either, and hands both on without copying what it does not need to.
#include "daemon/util/result.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace jitsym {
namespace {

Result<int> Half(int n) {
  if (n % 2 != 0) return MakeError(ErrorKind::kUsage, std::to_string(n) + " is odd");
  return n / 2;
}

// A caller passes a failure on unchanged.
Result<int> Quarter(int n) {
  Result<int> h = Half(n);
  if (!h) return std::move(h).error();
  return Half(*h);
}

TEST(Result, ValueOrError) {
  Result<int> ok = Half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  Result<int> bad = Half(7);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(bad.error().message, "7 is odd");
}

TEST(Result, FailuresPassThroughUnchanged) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);  // 3 is odd
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "3 is odd");
}

TEST(Result, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r);
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
}

TEST(Result, StatusCarriesNoValue) {
  Status ok = OkStatus();
  EXPECT_TRUE(ok.ok());
  Status bad = MakeError(ErrorKind::kMalformed, "truncated", 40);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().offset, 40u);
  EXPECT_EQ(ErrorKindName(bad.error().kind), "malformed");
}

TEST(Result, ReadingTheWrongSideThrows) {
  Result<int> bad = Half(1);
  EXPECT_THROW((void)bad.value(), std::bad_variant_access);
  Result<int> ok = Half(2);
  EXPECT_THROW((void)ok.error(), std::bad_variant_access);
}

}  // namespace
}  // namespace jitsym
