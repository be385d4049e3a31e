#include "engine/exec/moe_traffic.h"

#include <gtest/gtest.h>

#include <vector>

namespace nvl::engine {
namespace {

using Row = std::vector<std::uint64_t>;

TEST(MoeTraffic, RowsCarryThePairsEachRankSendsAndGetsBackNoneToItself) {
  // Three experts on three ranks, one each. Rank 0 sends 3 pairs to rank 1's expert and keeps 4 at home;
  // rank 1 sends 2 to rank 0's and 5 to rank 2's; rank 2 sends 1 to rank 0's.
  const ExpertPlacement placement(uniform_expert_load(3), 3, 0);
  auto on = [&](std::int64_t rank) { return static_cast<std::int32_t>(placement.experts_on(rank).front()); };
  MoeTraffic traffic(placement);
  const std::vector<std::vector<hal::RoutedExpert>> routed = {
      {{on(0), 4}, {on(1), 3}}, {{on(0), 2}, {on(2), 5}}, {{on(0), 1}}};
  traffic.assign(routed);
  // Dispatch: a row per sender; combine: the results go back, a row per expert's rank (the column).
  EXPECT_EQ(traffic.dispatch_row(0, 10), (Row{0, 30, 0}));
  EXPECT_EQ(traffic.dispatch_row(1, 10), (Row{20, 0, 50}));
  EXPECT_EQ(traffic.dispatch_row(2, 10), (Row{10, 0, 0}));
  EXPECT_EQ(traffic.combine_row(0, 7), (Row{0, 14, 7}));
  EXPECT_EQ(traffic.combine_row(1, 7), (Row{21, 0, 0}));
  EXPECT_EQ(traffic.combine_row(2, 7), (Row{0, 35, 0}));
  // The pairs kept at home are computed but sent nowhere.
  EXPECT_EQ(traffic.expert_pairs(0), 4 + 2 + 1);
}

}  // namespace
}  // namespace nvl::engine
