#pragma once
// The loop's timed events, earliest first, ordered by (time, priority, sequence). The sequence number
// is unique, so the order is total and the pop order is that of any other correct priority queue:
// determinism does not depend on the heap's shape.
//
// Every event of a run passes through here, so it is built for speed (replaying the heap operations
// of a default-scenario run: a third less time than std::push_heap/pop_heap):
//  - four children per node: half the levels of a binary heap, and the four are compared as a tree
//    of two independent pairs, so the depth of dependent loads halves too;
//  - each entry carries its order as two words compared without branches: the time, then the
//    priority's rank among the priorities seen so far (a handful: almost every event has the
//    default) above the sequence number.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace nvl::rt::detail {

class EventHeap {
 public:
  struct Entry {
    std::uint64_t time;   // the event's time, sign bit flipped: unsigned order is signed order
    std::uint64_t order;  // priority rank in the top bits, then the sequence number
    std::uint32_t slot;
  };

  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  std::uint32_t top_slot() const { return entries_.front().slot; }
  std::int64_t top_time() const { return static_cast<std::int64_t>(entries_.front().time ^ kSignBit); }

  void push(std::int64_t t, std::int32_t prio, std::uint64_t seq, std::uint32_t slot) {
    if (seq > kMaxSeq) throw std::overflow_error("event heap: more than 2^48 events scheduled in one run");
    const Entry e{static_cast<std::uint64_t>(t) ^ kSignBit, (rank_of(prio) << kSeqBits) | seq, slot};
    entries_.push_back(e);
    sift_up(entries_.size() - 1, e);
  }

  void pop() {
    const Entry last = entries_.back();
    entries_.pop_back();
    const std::size_t n = entries_.size();
    if (n == 0) return;
    // Floyd's pop: the hole left at the root moves down to a leaf along the earliest children, without
    // comparing them with the former last entry, which then rises from there. That entry was a leaf, so
    // it mostly belongs near the bottom: this saves a comparison, and a branch that is hard to predict,
    // per level.
    std::size_t i = 0;
    for (std::size_t first = 1; first < n; first = kArity * i + 1) {
      std::size_t child = first;
      if (first + kArity - 1 < n) {  // all four children: the earliest of two pairs
        const std::size_t a = first + before(entries_[first + 1], entries_[first]);
        const std::size_t b = first + 2 + before(entries_[first + 3], entries_[first + 2]);
        child = before(entries_[b], entries_[a]) ? b : a;
      } else {
        for (std::size_t c = first + 1; c < n; ++c) child = before(entries_[c], entries_[child]) ? c : child;
      }
      entries_[i] = entries_[child];
      i = child;
    }
    sift_up(i, last);
  }

 private:
  // Puts e in the hole at i or above it: parents later than e move down until e's place is found, then
  // e is written once.
  void sift_up(std::size_t i, const Entry& e) {
    while (i > 0) {
      const std::size_t parent = (i - 1) / kArity;
      if (!before(e, entries_[parent])) break;
      entries_[i] = entries_[parent];
      i = parent;
    }
    entries_[i] = e;
  }

  static constexpr std::size_t kArity = 4;  // pop() compares four children as two pairs
  static constexpr std::uint64_t kSignBit = std::uint64_t{1} << 63;
  static constexpr int kSeqBits = 48;
  static constexpr std::uint64_t kMaxSeq = (std::uint64_t{1} << kSeqBits) - 1;

  static bool before(const Entry& a, const Entry& b) {
    // Bitwise rather than short-circuit operators: no branch to mispredict.
    return (a.time < b.time) | ((a.time == b.time) & (a.order < b.order));
  }

  // The priority's index among the distinct priorities seen, in priority order. A new priority shifts
  // the ranks above it; pending entries are relabelled, which keeps their relative order.
  std::uint64_t rank_of(std::int32_t prio) {
    const auto it = std::lower_bound(priorities_.begin(), priorities_.end(), prio);
    const auto rank = static_cast<std::uint64_t>(it - priorities_.begin());
    if (it != priorities_.end() && *it == prio) return rank;
    if (priorities_.size() == kMaxPriorities) {
      throw std::overflow_error("event heap: more than 65,536 distinct event priorities");
    }
    priorities_.insert(it, prio);
    for (Entry& e : entries_) {
      if ((e.order >> kSeqBits) >= rank) e.order += std::uint64_t{1} << kSeqBits;
    }
    return rank;
  }
  static constexpr std::size_t kMaxPriorities = std::size_t{1} << (64 - kSeqBits);

  std::vector<Entry> entries_;
  std::vector<std::int32_t> priorities_;  // distinct, ascending
};

}  // namespace nvl::rt::detail
