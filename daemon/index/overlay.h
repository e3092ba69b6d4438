// The overlay of layers of pieces, in address order: each layer is a sequence of disjoint pieces
// sorted by start, and at each address the piece of the first layer (the lowest index) that
// covers it answers. It is the one precedence rule of "what is where now": the runs of a
// RangeSetSnapshot (the newest run first, LatestCursor) and the sources and images of a process
// (its `symbols` answer, daemon/query/symbols_query.h).
//
// Lazy: each Next looks at the layers' current pieces only, so nothing is copied, whatever the
// size of the layers. A sweep with two heaps: `pending` holds the layers whose current piece
// starts ahead (by start), `active` those whose piece may cover the position (by layer index).
// The top of `active` answers until its piece ends or a piece of a higher layer starts; a layer
// found under it with a piece that has ended is moved on (Seek) only once it reaches the top.
// Each piece enters each heap at most once: O(n log k) for n pieces in k layers, and hidden
// runs of pieces are skipped with one Seek.
//
// A Layer is a cursor with:
//   bool done() const;            no piece left
//   uint64_t start() const;       its current piece, start() < end()
//   uint64_t end() const;
//   void Next();                  to the following piece
//   void Seek(uint64_t addr);     to the first piece that ends after addr (never backwards)
#ifndef JITSYM_DAEMON_INDEX_OVERLAY_H_
#define JITSYM_DAEMON_INDEX_OVERLAY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace jitsym::index {

template <typename Layer>
class Overlay {
 public:
  // [start, end) answered by the current piece of layer `layer` (a part of that piece: where
  // no higher layer covers it, and no longer than the piece).
  struct Segment {
    uint64_t start = 0;
    uint64_t end = 0;
    size_t layer = 0;
  };

  // Adds a layer below every layer added before. What it has before the end of the last
  // segment returned is hidden (that address range was answered already): it is skipped.
  void Add(Layer layer) {
    const size_t i = layers_.size();
    layers_.push_back(std::move(layer));
    Layer& l = layers_.back();
    if (!l.done() && l.end() <= pos_) MovePast(l);
    Place(i);
  }

  size_t size() const { return layers_.size(); }
  Layer& layer(size_t i) { return layers_[i]; }
  const Layer& layer(size_t i) const { return layers_[i]; }

  // The next segment, if one starts before `before`; false (and nothing skipped) otherwise.
  // Segments come in address order, each as long as possible: two segments in a row of the
  // same layer are parts of different pieces, or have another layer's segment between them.
  bool Next(Segment* out, uint64_t before = std::numeric_limits<uint64_t>::max()) {
    for (;;) {
      // Layers whose piece starts by now may answer.
      while (!pending_.empty() && pending_.front().first <= pos_) {
        const uint32_t i = pending_.front().second;
        PopPending();
        PushActive(i);
      }
      // The top answers if its piece covers the position; one that has ended moves on.
      while (!active_.empty()) {
        const uint32_t i = active_.front();
        Layer& l = layers_[i];
        if (!l.done() && l.start() <= pos_ && pos_ < l.end()) break;
        PopActive();
        if (!l.done() && l.end() <= pos_) MovePast(l);
        Place(i);
      }
      if (active_.empty()) {
        if (pending_.empty()) return false;
        const uint64_t next = pending_.front().first;  // a gap up to the next piece
        if (next >= before) return false;
        pos_ = next;
        continue;
      }
      if (pos_ >= before) return false;
      const uint32_t top = active_.front();
      uint64_t end = layers_[top].end();
      // Pieces starting under the top's are hidden for now; a higher layer's cuts it.
      while (!pending_.empty() && pending_.front().first < end) {
        const auto [start, i] = pending_.front();
        if (i < top) {
          end = start;
          break;
        }
        PopPending();
        PushActive(i);
      }
      *out = {pos_, end, top};
      pos_ = end;
      return true;
    }
  }

  // Goes on from addr (not backwards): the next segment starts at addr or later.
  void Seek(uint64_t addr) {
    if (addr <= pos_) return;
    pos_ = addr;
    pending_.clear();
    active_.clear();
    for (size_t i = 0; i < layers_.size(); ++i) {
      Layer& l = layers_[i];
      if (!l.done() && l.end() <= pos_) l.Seek(pos_);
      Place(static_cast<uint32_t>(i));
    }
  }

 private:
  // Past pieces that ended by pos_: the next piece first (the usual case), else a Seek.
  void MovePast(Layer& l) {
    l.Next();
    if (!l.done() && l.end() <= pos_) l.Seek(pos_);
  }
  // Into the heap its current piece calls for (none when it is done).
  void Place(size_t i) {
    const Layer& l = layers_[i];
    if (l.done()) return;
    if (l.start() <= pos_) {
      PushActive(static_cast<uint32_t>(i));
    } else {
      pending_.emplace_back(l.start(), static_cast<uint32_t>(i));
      std::push_heap(pending_.begin(), pending_.end(), std::greater<>());
    }
  }
  void PopPending() {
    std::pop_heap(pending_.begin(), pending_.end(), std::greater<>());
    pending_.pop_back();
  }
  void PushActive(uint32_t i) {
    active_.push_back(i);
    std::push_heap(active_.begin(), active_.end(), std::greater<>());
  }
  void PopActive() {
    std::pop_heap(active_.begin(), active_.end(), std::greater<>());
    active_.pop_back();
  }

  std::vector<Layer> layers_;
  std::vector<std::pair<uint64_t, uint32_t>> pending_;  // min-heap: (start, layer)
  std::vector<uint32_t> active_;                        // min-heap: layer
  uint64_t pos_ = 0;                                    // everything before was answered
};

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_OVERLAY_H_
