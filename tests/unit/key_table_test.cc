// KeyTable against std::unordered_map on random keys (empty, short, long, colliding prefixes),
// across many growths.
#include "client/key_table.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>

namespace jitsym::client {
namespace {

TEST(KeyTableTest, EmptyTable) {
  const KeyTable t;
  EXPECT_EQ(t.Find(""), nullptr);
  EXPECT_EQ(t.Find("x"), nullptr);
  EXPECT_EQ(t.size(), 0u);
}

TEST(KeyTableTest, MatchesUnorderedMap) {
  KeyTable t;
  std::unordered_map<std::string, uint64_t> want;
  std::mt19937 rng(7);
  for (uint64_t i = 0; i < 200000; ++i) {
    std::string key(rng() % 40, '\0');
    for (char& c : key) c = static_cast<char>(rng() % 3);  // many keys share prefixes
    const uint64_t* got = t.Find(key);
    auto it = want.find(key);
    ASSERT_EQ(got == nullptr, it == want.end()) << i;
    if (got != nullptr) {
      ASSERT_EQ(*got, it->second);
      continue;
    }
    t.Insert(key, i);
    want.emplace(key, i);
  }
  EXPECT_EQ(t.size(), want.size());
  for (const auto& [key, value] : want) {
    const uint64_t* got = t.Find(key);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(*got, value);
  }
  EXPECT_EQ(t.Find(std::string(41, '\0')), nullptr);
}

}  // namespace
}  // namespace jitsym::client
