// The per-sample cost of `jitsym flamegraph` against `jitsym annotate --folded`: FlameTree::Add
// of a sample's frames, against what --folded does per sample (a std::string key "comm;outer;
// ...;leaf" built and counted in an unordered_map). Same stacks, same order, for both.
//   build/tests/bench/flame_bench --benchmark_repetitions=3
// /stacks: distinct stacks among the 200,000 samples. FoldedKey/sorted:1 adds the sort of the
// distinct keys annotate does before printing; FlameTreeAdd/built:1 adds building the tree from
// the distinct stacks (done when the tree is first read). Compare like with like: sorted:0 with
// built:0 (the per-sample cost), sorted:1 with built:1 (the whole reading).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/flame_graph.h"

namespace jitsym::client {
namespace {

struct Sample {
  std::vector<FlameFrame> frames;  // root first; frames[0] is the comm
};

// A profile shaped like a real one: a few comms, a call tree of `functions` names (C++- and
// V8-like, 20 to 80 bytes), stacks 8 to 60 deep that share their outer frames, drawn from
// `distinct` stacks with a skewed distribution (hot paths repeat), in random order.
struct Profile {
  std::vector<std::string> names;
  std::vector<Sample> samples;
};

Profile MakeProfile(size_t distinct, size_t samples) {
  std::mt19937_64 rng(7);
  Profile p;
  const size_t functions = 20000;
  p.names.reserve(functions + 4);
  for (const char* comm : {"node", "java", "dotnet", "mono"}) p.names.emplace_back(comm);
  for (size_t i = 0; i < functions; ++i) {
    std::string name;
    switch (i % 3) {
      case 0:
        name = "LazyCompile:*handler_" + std::to_string(i) + " /srv/app/lib/module" +
               std::to_string(i % 97) + ".js:" + std::to_string(i % 1000);
        break;
      case 1:
        name = "v8::internal::Runtime_Function" + std::to_string(i) + "(int, unsigned long*)";
        break;
      default:
        name = "std::vector<Node*>::_M_realloc_insert" + std::to_string(i);
        break;
    }
    p.names.push_back(std::move(name));
  }
  // Distinct stacks: a random walk down a tree whose fan-out grows with depth.
  std::vector<std::vector<uint32_t>> stacks(distinct);
  for (auto& s : stacks) {
    const size_t depth = 8 + rng() % 52;
    s.push_back(static_cast<uint32_t>(rng() % 4));
    uint64_t node = s.back();
    for (size_t d = 1; d < depth; ++d) {
      const uint64_t fanout = d < 4 ? 1 : d < 10 ? 3 : 12;
      node = node * 131 + 1 + rng() % fanout;
      s.push_back(static_cast<uint32_t>(4 + node % functions));
    }
  }
  std::vector<size_t> pick(distinct);
  p.samples.resize(samples);
  for (auto& sample : p.samples) {
    // Skewed: the square of a uniform draw favours the first stacks.
    const double u = static_cast<double>(rng() % 1000000) / 1e6;
    const auto& s = stacks[static_cast<size_t>(u * u * static_cast<double>(distinct))];
    for (size_t k = 0; k < s.size(); ++k) {
      const std::string& name = p.names[s[k]];
      sample.frames.push_back(FlameFrame{name, k == 0 ? FrameKind::kComm : GuessKind(name)});
    }
  }
  return p;
}

// Argument: distinct stacks among the 200,000 samples.
const Profile& TheProfile(int64_t distinct) {
  static std::map<int64_t, Profile> profiles;
  auto it = profiles.find(distinct);
  if (it == profiles.end()) {
    it = profiles.emplace(distinct, MakeProfile(static_cast<size_t>(distinct), 200000)).first;
  }
  return it->second;
}

// What annotate --folded does per sample (annotate_command.cc EndStack).
void BM_FoldedKey(benchmark::State& state) {
  const Profile& p = TheProfile(state.range(0));
  for (auto _ : state) {
    std::unordered_map<std::string, uint64_t> folded;
    for (const Sample& s : p.samples) {
      std::string key(s.frames[0].name);
      for (size_t k = 1; k < s.frames.size(); ++k) {
        key.push_back(';');
        key.append(s.frames[k].name);
      }
      ++folded[key];
    }
    if (state.range(1) != 0) {  // and sorted for printing, as annotate does at the end
      std::vector<std::pair<std::string, uint64_t>> stacks(folded.begin(), folded.end());
      std::sort(stacks.begin(), stacks.end());
      benchmark::DoNotOptimize(stacks.data());
    }
    benchmark::DoNotOptimize(folded.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * p.samples.size()));
}
BENCHMARK(BM_FoldedKey)
    ->ArgsProduct({{2000, 20000, 100000}, {0, 1}})
    ->ArgNames({"stacks", "sorted"})
    ->Unit(benchmark::kMillisecond);

void BM_FlameTreeAdd(benchmark::State& state) {
  const Profile& p = TheProfile(state.range(0));
  size_t nodes = 0;
  for (auto _ : state) {
    FlameTree tree;
    for (const Sample& s : p.samples) tree.Add(s.frames, 1);
    if (state.range(1) != 0) nodes = tree.node_count();  // and the tree built from the stacks
    benchmark::DoNotOptimize(tree.total_samples());
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * p.samples.size()));
}
BENCHMARK(BM_FlameTreeAdd)
    ->ArgsProduct({{2000, 20000, 100000}, {0, 1}})
    ->ArgNames({"stacks", "built"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace jitsym::client

BENCHMARK_MAIN();
