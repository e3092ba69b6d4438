// The overlay of layers (index/overlay.h) and the cursor over a snapshot's latest pieces
// (index/latest_cursor.h) against brute force: which layer answers each address, and what a
// lookup without a time finds there.
#include "daemon/index/latest_cursor.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <vector>

#include "daemon/index/overlay.h"
#include "daemon/index/range_set.h"

namespace jitsym::index {
namespace {

struct Piece {
  uint64_t start, end;
};

// A layer over a vector of disjoint sorted pieces; counts the pieces it visits.
class VectorLayer {
 public:
  explicit VectorLayer(std::vector<Piece> pieces, uint64_t* visits = nullptr)
      : pieces_(std::move(pieces)), visits_(visits) {}
  bool done() const { return i_ >= pieces_.size(); }
  uint64_t start() const { return pieces_[i_].start; }
  uint64_t end() const { return pieces_[i_].end; }
  size_t index() const { return i_; }
  void Next() {
    ++i_;
    if (visits_ != nullptr) ++*visits_;
  }
  void Seek(uint64_t addr) {
    // Binary search, as a run's fence does.
    size_t lo = i_, hi = pieces_.size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (pieces_[mid].end <= addr) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    i_ = lo;
    if (visits_ != nullptr) ++*visits_;
  }

 private:
  std::vector<Piece> pieces_;
  size_t i_ = 0;
  uint64_t* visits_;
};

std::vector<Piece> RandomPieces(std::mt19937& rng, uint64_t from, uint64_t span, int n) {
  std::vector<Piece> out;
  uint64_t at = from + rng() % 20;
  for (int i = 0; i < n && at < from + span; ++i) {
    const uint64_t size = 1 + rng() % 30;
    out.push_back({at, at + size});
    at += size + (rng() % 3 == 0 ? 0 : rng() % 25);
  }
  return out;
}

// Which layer (and which of its pieces) covers addr first; nullopt if none.
std::optional<std::pair<size_t, size_t>> Owner(const std::vector<std::vector<Piece>>& layers,
                                               uint64_t addr) {
  for (size_t l = 0; l < layers.size(); ++l) {
    for (size_t p = 0; p < layers[l].size(); ++p) {
      if (layers[l][p].start <= addr && addr < layers[l][p].end) return std::pair(l, p);
    }
  }
  return std::nullopt;
}

TEST(Overlay, FirstLayerCoveringEachAddressAnswersInMaximalSegments) {
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    const int k = 1 + static_cast<int>(rng() % 6);
    std::vector<std::vector<Piece>> layers;
    Overlay<VectorLayer> overlay;
    for (int l = 0; l < k; ++l) {
      layers.push_back(RandomPieces(rng, rng() % 100, 400, 1 + static_cast<int>(rng() % 15)));
      overlay.Add(VectorLayer(layers.back()));
    }
    std::vector<std::optional<std::pair<size_t, size_t>>> got(600);
    Overlay<VectorLayer>::Segment s, prev{};
    bool have_prev = false;
    while (overlay.Next(&s)) {
      ASSERT_LT(s.start, s.end);
      if (have_prev) {
        ASSERT_LE(prev.end, s.start) << "segments out of order";
        // Maximal: the same piece never goes on in the next segment.
        const size_t piece = overlay.layer(s.layer).index();
        ASSERT_FALSE(prev.end == s.start && prev.layer == s.layer &&
                     Owner(layers, prev.start)->second == piece)
            << "round " << round << ": a piece split at " << s.start;
      }
      for (uint64_t a = s.start; a < s.end; ++a) {
        got[a] = std::pair(s.layer, overlay.layer(s.layer).index());
      }
      prev = s;
      have_prev = true;
    }
    for (uint64_t a = 0; a < got.size(); ++a) {
      ASSERT_EQ(got[a], Owner(layers, a)) << "round " << round << " addr " << a;
    }
  }
}

TEST(Overlay, LayersAddedLaterAreBelowAndStartWhereTheLastSegmentEnded) {
  // Layers added in order of their first address, each once the overlay reaches it (what the
  // symbols answer does with the images a process maps): the same answer as all at once.
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::vector<Piece>> layers;
    std::vector<uint64_t> bases;
    uint64_t base = 0;
    for (int l = 0; l < 8; ++l) {
      base += rng() % 60;
      bases.push_back(base);
      layers.push_back(RandomPieces(rng, base, 150, 1 + static_cast<int>(rng() % 8)));
    }
    Overlay<VectorLayer> overlay;
    size_t added = 0;
    std::vector<std::optional<size_t>> got(800);
    Overlay<VectorLayer>::Segment s;
    for (;;) {
      const uint64_t before = added < bases.size() ? bases[added] : UINT64_MAX;
      if (overlay.Next(&s, before)) {
        ASSERT_LT(s.start, before) << "a segment starting at or after the next layer's base";
        for (uint64_t a = s.start; a < s.end; ++a) got[a] = s.layer;
        continue;
      }
      if (added == layers.size()) break;
      overlay.Add(VectorLayer(layers[added++]));
    }
    for (uint64_t a = 0; a < got.size(); ++a) {
      const auto owner = Owner(layers, a);
      ASSERT_EQ(got[a], owner ? std::optional(owner->first) : std::nullopt)
          << "round " << round << " addr " << a;
    }
  }
}

TEST(Overlay, HiddenPiecesAreSkippedNotVisited) {
  // One piece over everything hides 10,000 layers of 1,000 pieces each: the sweep moves each
  // hidden layer on once, never piece by piece (O(n log k), not the pieces of every layer).
  uint64_t visits = 0;
  Overlay<VectorLayer> overlay;
  overlay.Add(VectorLayer({{0, 1u << 30}}));
  for (int l = 0; l < 10000; ++l) {
    std::vector<Piece> pieces;
    for (uint64_t i = 0; i < 1000; ++i) pieces.push_back({i * 16, i * 16 + 8});
    overlay.Add(VectorLayer(std::move(pieces), &visits));
  }
  Overlay<VectorLayer>::Segment s;
  size_t n = 0;
  while (overlay.Next(&s)) ++n;
  EXPECT_EQ(n, 1u);
  EXPECT_LE(visits, 3u * 10000);
}

// A snapshot of random ranges in several runs, tombstones among them.
std::shared_ptr<const RangeSetSnapshot> RandomSnapshot(std::mt19937& rng) {
  RangeSet set;
  std::shared_ptr<const RangeSetSnapshot> snap = set.Publish();
  uint64_t time = 1;
  const int n = 1 + static_cast<int>(rng() % 300);
  for (int i = 0; i < n; ++i) {
    const uint64_t start = rng() % 1000, size = 1 + rng() % 60;
    const uint32_t payload = rng() % 8 == 0 ? kTombstone : static_cast<uint32_t>(i);
    set.Add(start, size, time += rng() % 3, payload);
    if (rng() % 9 == 0) snap = set.Publish();
  }
  return set.Publish();
}

TEST(LatestCursor, SeekGoesOnWithWhatALookupFindsFromThere) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    const auto snap = RandomSnapshot(rng);
    LatestCursor cursor(*snap);
    uint64_t a = 0;
    while (!cursor.done()) {
      // Every address up to the piece: nothing there; in it: its range.
      const LatestPiece& p = cursor.piece();
      for (; a < p.end; ++a) {
        const Found f = snap->Find(a, std::nullopt);
        const bool live = f && f.range->payload != kTombstone;
        if (a < p.start) {
          ASSERT_FALSE(live) << "round " << round << " addr " << a << " skipped";
        } else {
          ASSERT_TRUE(live && f.range == p.range) << "round " << round << " addr " << a;
        }
      }
      // Sometimes jump ahead, as an overlay above hides what is in between.
      if (rng() % 3 == 0) {
        a += rng() % 80;
        cursor.Seek(a);
        if (!cursor.done()) {
          // The piece covering a (cut to start there), or the next one.
          ASSERT_GT(cursor.piece().end, a);
          ASSERT_GE(cursor.piece().start, a);
        }
      } else {
        cursor.Next();
      }
    }
    for (; a < 1100; ++a) {
      const Found f = snap->Find(a, std::nullopt);
      ASSERT_FALSE(f && f.range->payload != kTombstone) << "round " << round << " addr " << a;
    }
  }
}

}  // namespace
}  // namespace jitsym::index
