// The persistent pid map (daemon/index/process_map.h) against std::map, by brute force: finds,
// lower bounds, order, counts, and that a copy is not changed by later sets of the original.
#include "daemon/index/process_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "daemon/index/index_view.h"

namespace jitsym::index {
namespace {

using Model = std::map<uint32_t, ProcessMap::Incarnations>;

void ExpectSame(const ProcessMap& m, const Model& model, uint32_t probe) {
  ASSERT_EQ(m.size(), model.size());
  size_t incarnations = 0;
  for (const auto& [pid, incs] : model) incarnations += incs.size();
  ASSERT_EQ(m.incarnations(), incarnations);
  std::vector<uint32_t> order;
  m.ForEach([&](uint32_t pid, const ProcessMap::Incarnations& incs) {
    order.push_back(pid);
    ASSERT_EQ(incs, model.at(pid));
  });
  std::vector<uint32_t> want;
  for (const auto& [pid, incs] : model) want.push_back(pid);
  ASSERT_EQ(order, want);
  const auto* found = m.Find(probe);
  auto it = model.find(probe);
  ASSERT_EQ(found != nullptr, it != model.end());
  if (found) EXPECT_EQ(*found, it->second);
  const auto lb = m.LowerBound(probe);
  auto mit = model.lower_bound(probe);
  ASSERT_EQ(lb.has_value(), mit != model.end());
  if (lb) {
    EXPECT_EQ(lb->first, mit->first);
    EXPECT_EQ(*lb->second, mit->second);
  }
}

TEST(ProcessMap, AgreesWithStdMapAndOldVersionsStayAsTheyWere) {
  std::mt19937 rng(3);
  ProcessMap m;
  Model model;
  std::vector<std::pair<ProcessMap, Model>> versions;
  auto pid_of = [&] {
    switch (rng() % 4) {
      case 0:
        return static_cast<uint32_t>(rng() % 64);
      case 1:
        return static_cast<uint32_t>(rng() % 40000);
      case 2:
        return static_cast<uint32_t>(0xffffffffu - rng() % 16);
      default:
        return static_cast<uint32_t>(rng());
    }
  };
  for (int step = 0; step < 5000; ++step) {
    const uint32_t pid = pid_of();
    if (rng() % 3 == 0) {
      m.Set(pid, {});
      model.erase(pid);
    } else {
      auto v = std::make_shared<ProcessView>();
      v->pid = pid;
      m.Add(pid, v);
      model[pid].push_back(v);
    }
    ExpectSame(m, model, rng() % 2 ? pid : pid_of());
    if (step % 500 == 0) versions.emplace_back(m, model);
  }
  for (const auto& [old, old_model] : versions) ExpectSame(old, old_model, 7);
  EXPECT_THROW(ProcessMap().at(1), std::out_of_range);
}

TEST(ProcessMap, EmptyAndExtremes) {
  ProcessMap m;
  EXPECT_TRUE(m.empty());
  EXPECT_FALSE(m.LowerBound(0));
  m.Add(0xffffffffu, std::make_shared<ProcessView>());
  m.Add(0, std::make_shared<ProcessView>());
  EXPECT_EQ(m.LowerBound(1)->first, 0xffffffffu);
  EXPECT_EQ(m.LowerBound(0)->first, 0u);
  m.Set(0xffffffffu, {});
  m.Set(0, {});
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.incarnations(), 0u);
}

}  // namespace
}  // namespace jitsym::index
