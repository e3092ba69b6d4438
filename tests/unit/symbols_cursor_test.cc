// The symbols answer walked by SymbolsCursor against the list it replaced, built whole: each
// source in precedence order, then each image at its base, contributing the parts of its latest
// pieces that nothing before covers, sorted at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "daemon/index/code_map.h"
#include "daemon/query/symbols_query.h"

namespace jitsym::query {
namespace {

std::shared_ptr<const index::SourceView> RandomSource(std::mt19937& rng, const std::string& name,
                                                      const std::string& origin,
                                                      const std::string& image) {
  index::CodeMap map;
  std::shared_ptr<const index::CodeMapSnapshot> snap = map.Publish();
  uint64_t time = 1;
  const int n = static_cast<int>(rng() % 120);
  for (int i = 0; i < n; ++i) {
    const uint64_t start = rng() % 2000, size = 1 + rng() % 80;
    if (rng() % 10 == 0) {
      map.Remove(start, size, time += 1);
    } else {
      map.Add(start, size, time += rng() % 3, map.Intern(name + "_" + std::to_string(i)));
    }
    if (rng() % 15 == 0) snap = map.Publish();  // several runs
  }
  auto source = std::make_shared<index::SourceView>();
  source->origin = OriginFromName(origin).value_or(Origin::kUnknown);
  source->path = "/tmp/" + name;
  source->image = image;
  source->code = map.Publish();
  return source;
}

// The answer as it was built before it streamed.
std::vector<proto::SymbolEntry> WholeList(
    const std::vector<std::shared_ptr<const index::SourceView>>& sources,
    const std::vector<ImageLookup::MappedImage>& images) {
  std::vector<std::pair<uint64_t, uint64_t>> covered;  // sorted, disjoint
  std::vector<proto::SymbolEntry> entries;
  // The parts of each piece nothing before covers.
  auto add_source = [&](const index::SourceView& source, uint64_t base, uint64_t limit) {
    std::vector<std::pair<uint64_t, uint64_t>> added;
    for (const index::LatestPiece& piece : source.code->ranges().Latest()) {
      const uint64_t start = piece.start + base, end = piece.end + base;
      if (end < start || (limit != 0 && end > limit)) continue;
      uint64_t at = start;
      std::vector<std::pair<uint64_t, uint64_t>> parts;
      for (const auto& [s, e] : covered) {
        if (e <= at) continue;
        if (s >= end) break;
        if (s > at) parts.emplace_back(at, s);
        at = std::max(at, e);
      }
      if (at < end) parts.emplace_back(at, end);
      for (const auto& [s, e] : parts) {
        proto::SymbolEntry& entry = entries.emplace_back();
        entry.start = s;
        entry.size = e - s;
        entry.name = source.code->name(*piece.range);
        entry.origin = source.origin;
        entry.image = source.image;
        added.emplace_back(s, e);
      }
    }
    covered.insert(covered.end(), added.begin(), added.end());
    std::sort(covered.begin(), covered.end());
  };
  for (const auto& s : sources) add_source(*s, 0, 0);
  for (const auto& img : images) add_source(*img.source, img.base, img.end);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  return entries;
}

TEST(SymbolsCursor, TheSameRangesAsTheWholeListInAddressOrder) {
  std::mt19937 rng(17);
  for (int round = 0; round < 300; ++round) {
    auto process = std::make_shared<index::ProcessView>();
    process->pid = 42;
    process->incarnation = 3;
    const char* origins[] = {"jitdump", "mlpd", "perfmap"};
    const int n_sources = static_cast<int>(rng() % 4);
    for (int i = 0; i < n_sources; ++i) {
      process->sources.push_back(RandomSource(rng, "src" + std::to_string(i), origins[i % 3], ""));
    }
    // Images at increasing bases, overlapping each other and the JIT code; some bounded.
    std::vector<std::shared_ptr<const index::SourceView>> image_sources;
    for (int i = 0; i < 2; ++i) {
      image_sources.push_back(
          RandomSource(rng, "img" + std::to_string(i), "r2rmap", "Image" + std::to_string(i)));
    }
    std::vector<ImageLookup::MappedImage> images;
    uint64_t base = 0;
    const int n_images = static_cast<int>(rng() % 6);
    for (int i = 0; i < n_images; ++i) {
      base += rng() % 1500;
      const uint64_t end = rng() % 3 == 0 ? base + rng() % 2500 : 0;
      images.push_back({image_sources[rng() % 2], base, end});
    }
    const auto want = WholeList(process->sources, images);
    SymbolsCursor cursor(42, process, images);
    EXPECT_EQ(cursor.incarnation(), 3u);
    std::vector<proto::SymbolEntry> got;
    for (proto::SymbolEntry e; cursor.Next(&e);) got.push_back(e);
    ASSERT_EQ(got.size(), want.size()) << "round " << round;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].start, want[i].start) << "round " << round << " entry " << i;
      ASSERT_EQ(got[i].size, want[i].size) << "round " << round << " entry " << i;
      ASSERT_EQ(got[i].name, want[i].name) << "round " << round << " entry " << i;
      ASSERT_EQ(got[i].origin, want[i].origin);
      ASSERT_EQ(got[i].image, want[i].image);
    }
  }
}

TEST(SymbolsCursor, AnImageAtAThousandBasesIsWalkedNotCopied) {
  // One image of 1,000 methods placed at 1,000 bases (a perfinfo file can do that): a million
  // entries, and the cursor holds a few cursors at a time.
  index::CodeMap map;
  for (uint64_t i = 0; i < 1000; ++i) {
    map.Add(0x1000 + i * 64, 64, 1, map.Intern("M" + std::to_string(i)));
  }
  auto image = std::make_shared<index::SourceView>();
  image->origin = Origin::kR2rmap;
  image->image = "Big";
  image->code = map.CompactAll();
  std::vector<ImageLookup::MappedImage> images;
  for (uint64_t k = 0; k < 1000; ++k) images.push_back({image, 0x7e0000000000 + k * 0x100000, 0});
  SymbolsCursor cursor(7, nullptr, images);
  EXPECT_LT(cursor.memory_bytes(), size_t{1} << 20);
  uint64_t n = 0, last_end = 0;
  for (proto::SymbolEntry e; cursor.Next(&e); ++n) {
    ASSERT_GE(e.start, last_end);
    last_end = e.start + e.size;
  }
  EXPECT_EQ(n, 1000u * 1000u);
  EXPECT_EQ(last_end, 0x7e0000000000 + 999 * 0x100000 + 0x1000 + 1000 * 64);
}

}  // namespace
}  // namespace jitsym::query
