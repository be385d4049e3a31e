#include "emu/report/itl_counts.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace nvl::emu {
namespace {

using Counts = std::vector<ItlCounts::Count>;

TEST(ItlCounts, EqualValuesAddUpAndComeOutAscending) {
  ItlCounts c{{30, 2}, {10, 1}, {30, 1}};
  c.add(20);
  c.add(10, 4);
  c.add(5, 0);  // no gap
  EXPECT_EQ(c.sorted(), (Counts{{10, 5}, {20, 1}, {30, 3}}));
  c.add(20, 2);  // after a read, still counted
  EXPECT_EQ(c.sorted(), (Counts{{10, 5}, {20, 3}, {30, 3}}));
  EXPECT_TRUE(ItlCounts{}.sorted().empty());
}

TEST(ItlCounts, ManyFoldsGiveWhatOneMapCounts) {
  // Enough gaps for several folds (each at least 65,536 pending), drawn from few values (as a run's
  // lockstep steps share theirs) and from many, against a plain ordered count of the same gaps.
  for (const int distinct : {40, 400'000}) {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int> value(0, distinct - 1);
    std::uniform_int_distribution<int> tokens(1, 3);
    ItlCounts c;
    std::map<double, std::uint64_t> expected;
    for (int i = 0; i < 600'000; ++i) {
      const double gap = 0.25 * value(rng);
      const auto n = static_cast<std::uint64_t>(tokens(rng));
      c.add(gap, n);
      expected[gap] += n;
    }
    EXPECT_EQ(c.sorted(), Counts(expected.begin(), expected.end())) << distinct << " distinct values";
  }
}

}  // namespace
}  // namespace nvl::emu
