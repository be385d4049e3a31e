// The event heap pops in (time, priority, sequence) order, including priorities first seen while
// entries are pending (their ranks shift) and negative times.
#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/event_heap.h"

namespace nvl::rt::detail {
namespace event_heap_test {

struct Event {
  std::int64_t t;
  std::int32_t prio;
  std::uint64_t seq;
  std::uint32_t slot;
};

TEST(EventHeap, PopsByTimeThenPriorityThenSequenceUnderInterleavedPushesAndPops) {
  EventHeap heap;
  std::vector<Event> pending;  // the reference: popped by a linear scan for the minimum
  std::mt19937_64 rng(3);
  std::uint64_t seq = 0;
  std::uint32_t popped = 0;
  const auto key = [](const Event& e) { return std::make_tuple(e.t, e.prio, e.seq); };
  for (int step = 0; step < 50'000; ++step) {
    if (pending.empty() || rng() % 5 < 3) {
      // Few distinct times (many ties) and a priority set that grows, with negative values, as the run goes.
      const Event e{static_cast<std::int64_t>(rng() % 40) - 20,
                    static_cast<std::int32_t>(rng() % (2 + step / 5'000)) * ((rng() & 1) ? 1 : -1), seq++,
                    static_cast<std::uint32_t>(step)};
      heap.push(e.t, e.prio, e.seq, e.slot);
      pending.push_back(e);
    } else {
      const auto min = std::min_element(pending.begin(), pending.end(),
                                        [&](const Event& a, const Event& b) { return key(a) < key(b); });
      ASSERT_EQ(heap.top_slot(), min->slot) << "step " << step;
      EXPECT_EQ(heap.top_time(), min->t);
      heap.pop();
      pending.erase(min);
      ++popped;
    }
    ASSERT_EQ(heap.size(), pending.size());
  }
  EXPECT_GT(popped, 10'000u);
}

TEST(EventHeap, ExtremeTimesKeepTheirOrder) {
  EventHeap heap;
  heap.push(INT64_MAX, 0, 0, 0);
  heap.push(INT64_MIN, 0, 1, 1);
  heap.push(0, INT32_MIN, 2, 2);
  heap.push(0, INT32_MAX, 3, 3);
  heap.push(-1, 0, 4, 4);
  std::vector<std::uint32_t> order;
  while (!heap.empty()) {
    order.push_back(heap.top_slot());
    heap.pop();
  }
  EXPECT_EQ(order, (std::vector<std::uint32_t>{1, 4, 2, 3, 0}));
}

}  // namespace event_heap_test
}  // namespace nvl::rt::detail
