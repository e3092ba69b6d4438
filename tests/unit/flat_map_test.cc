// FlatMap32 (daemon/util/flat_map.h) against std::unordered_map, through growth and with keys
// that all hash alike.
#include "daemon/util/flat_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace jitsym {
namespace {

struct AllAlike {
  size_t operator()(uint64_t) const { return 7; }
};

template <typename Hash>
void ExpectLikeUnorderedMap(size_t keys, size_t expected) {
  FlatMap32<uint64_t, Hash> map(expected);
  std::unordered_map<uint64_t, uint32_t> oracle;
  std::mt19937_64 rng(keys);
  for (size_t i = 0; i < keys; ++i) {
    const uint64_t k = rng() % (4 * keys);  // repeats: found, not inserted again
    if (const uint32_t* v = map.Find(k)) {
      ASSERT_EQ(oracle.count(k), 1u);
      EXPECT_EQ(*v, oracle[k]);
      continue;
    }
    ASSERT_EQ(oracle.count(k), 0u) << k;
    map.Insert(k, static_cast<uint32_t>(i));
    oracle[k] = static_cast<uint32_t>(i);
  }
  EXPECT_EQ(map.size(), oracle.size());
  for (uint64_t k = 0; k < 4 * keys; ++k) {
    const uint32_t* v = map.Find(k);
    auto it = oracle.find(k);
    ASSERT_EQ(v != nullptr, it != oracle.end()) << k;
    if (v) {
      EXPECT_EQ(*v, it->second);
    }
  }
}

TEST(FlatMap32, FindsWhatWasInsertedThroughGrowth) {
  ExpectLikeUnorderedMap<MixHash>(100000, 0);
  ExpectLikeUnorderedMap<MixHash>(1000, 1000);
}

TEST(FlatMap32, KeysThatAllHashAlike) { ExpectLikeUnorderedMap<AllAlike>(500, 0); }

}  // namespace
}  // namespace jitsym
