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

// Each step starts from nothing: what the last step routed leaves no pair, slot or row entry behind, after
// a sparse step as after a dense one (the step clears only what the last one set).
TEST(MoeTraffic, AStepKeepsNothingOfTheStepBefore) {
  const ExpertPlacement placement(uniform_expert_load(6), 3, 0);
  auto on = [&](std::int64_t rank, std::size_t slot) {
    return static_cast<std::int32_t>(placement.experts_on(rank).at(slot));
  };
  MoeTraffic traffic(placement);
  traffic.assign(std::vector<std::vector<hal::RoutedExpert>>{
      {{on(1, 0), 3}, {on(1, 1), 2}, {on(2, 0), 1}}, {{on(0, 0), 4}, {on(0, 1), 1}}, {{on(1, 1), 6}}});
  EXPECT_EQ(traffic.slots_hit(1), 2);
  // The next step: rank 0 sends one pair to rank 2's second expert; nothing else moves.
  traffic.assign(std::vector<std::vector<hal::RoutedExpert>>{{{on(2, 1), 1}}, {}, {}});
  EXPECT_EQ(traffic.dispatch_row(0, 10), (Row{0, 0, 10}));
  EXPECT_EQ(traffic.dispatch_row(1, 10), (Row{0, 0, 0}));
  EXPECT_EQ(traffic.dispatch_row(2, 10), (Row{0, 0, 0}));
  EXPECT_EQ(traffic.combine_row(2, 1), (Row{1, 0, 0}));
  for (std::int64_t d = 0; d < 3; ++d) {
    EXPECT_EQ(traffic.expert_pairs(d), d == 2 ? 1 : 0) << "rank " << d;
    EXPECT_EQ(traffic.slots_hit(d), d == 2 ? 1 : 0) << "rank " << d;
  }
  // And the step after that hits rank 2's first expert, whose slot the first step had set.
  traffic.assign(std::vector<std::vector<hal::RoutedExpert>>{{}, {}, {{on(2, 0), 2}}});
  EXPECT_EQ(traffic.slots_hit(2), 1);
  EXPECT_EQ(traffic.expert_pairs(2), 2);
  EXPECT_EQ(traffic.dispatch_row(0, 10), (Row{0, 0, 0}));
}

}  // namespace
}  // namespace nvl::engine
