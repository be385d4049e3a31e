#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "engine/eplb/expert_placement.h"
#include "fakegpu/expert_popularity.h"

namespace nvl::engine {
namespace expert_placement_test {

TEST(ExpertPlacement, UniformLoadIsPerfectlyBalanced) {
  const ExpertLoad uniform(256, 1.0 / 256);
  const ExpertPlacement p(uniform, 64, 0);
  EXPECT_EQ(p.slots_per_rank(), 4);
  EXPECT_NEAR(p.imbalance(uniform), 1.0, 1e-9);
  std::set<std::int64_t> all;
  for (std::int64_t r = 0; r < 64; ++r) all.insert(p.experts_on(r).begin(), p.experts_on(r).end());
  EXPECT_EQ(all.size(), 256u);
}

TEST(ExpertPlacement, RedundantCopiesGoToHotExpertsAndCutImbalance) {
  rt::Rng rng(rt::Rng::derive_seed(1, "eplb"));
  const ExpertLoad skewed = fakegpu::ExpertPopularity(256, 1.0, rng).shares();
  const ExpertPlacement plain(skewed, 64, 0);
  const ExpertPlacement redundant(skewed, 64, 64);
  const auto hottest = static_cast<std::int64_t>(std::max_element(skewed.begin(), skewed.end()) - skewed.begin());
  EXPECT_GT(redundant.replicas_of(hottest), 1);
  EXPECT_LT(redundant.imbalance(skewed), plain.imbalance(skewed));
  EXPECT_GT(plain.imbalance(skewed), 1.5);  // a Zipf(1) load over 64 ranks is badly skewed without copies
  // No rank holds two copies of one expert.
  for (std::int64_t r = 0; r < 64; ++r) {
    const auto& e = redundant.experts_on(r);
    EXPECT_EQ(std::set<std::int64_t>(e.begin(), e.end()).size(), e.size());
  }
}

TEST(ExpertPlacement, SeventyTwoRanksNeedRedundancy) {
  const ExpertLoad uniform(256, 1.0 / 256);
  EXPECT_THROW(ExpertPlacement(uniform, 72, 0), std::invalid_argument);
  const ExpertPlacement p(uniform, 72, 32);
  EXPECT_EQ(p.slots_per_rank(), 4);
}

TEST(ExpertPlacement, LosingARankLosesOnlyExpertsWithoutCopies) {
  rt::Rng rng(rt::Rng::derive_seed(2, "eplb"));
  const ExpertLoad load = fakegpu::ExpertPopularity(256, 0.8, rng).shares();
  const ExpertPlacement p(load, 64, 64);
  for (std::int64_t r = 0; r < 64; ++r) {
    for (std::int64_t e : p.experts_lost_with(r)) EXPECT_EQ(p.replicas_of(e), 1);
  }
}

TEST(ExpertPlacement, RebalancingMovesOnlyChangedSlots) {
  rt::Rng rng(rt::Rng::derive_seed(3, "eplb"));
  const ExpertLoad a = fakegpu::ExpertPopularity(256, 1.0, rng).shares();
  const ExpertLoad b = fakegpu::ExpertPopularity(256, 1.0, rng).shares();
  const ExpertPlacement pa(a, 64, 64);
  EXPECT_EQ(pa.slots_changed_to(ExpertPlacement(a, 64, 64)), 0);
  const auto moved = pa.slots_changed_to(ExpertPlacement(b, 64, 64));
  EXPECT_GT(moved, 0);
  EXPECT_LE(moved, 64 * 5);
}

TEST(ExpertLoad, CountsAndBadInput) {
  const ExpertLoad l = expert_load_from_counts({1, 3});
  EXPECT_DOUBLE_EQ(l[1], 0.75);
  EXPECT_THROW(expert_load_from_counts({0, 0}), std::invalid_argument);
}

}  // namespace expert_placement_test
}  // namespace nvl::engine
