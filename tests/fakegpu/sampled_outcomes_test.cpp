#include "fakegpu/sampled_outcomes.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "emu/rt/virtual_runtime.h"

namespace nvl::fakegpu {
namespace {

TEST(SampledOutcomes, EveryBatchSizeRoutesEachTokenToTopKDistinctExpertsListedAscending) {
  // Token by token (1 and 50 tokens: at most 400 pairs of 256 experts) and as one multinomial (200
  // tokens); few experts chosen and most of them, skewed and not. One sampler serves them in turn, as a
  // GPU's does step after step: a count or a chosen expert left behind by one call would show in the
  // next one's list.
  rt::VirtualRuntime rt;
  for (const double skew : {0.0, 1.2}) {
    SampledOutcomes outcomes(rt.rng("gpu0"), std::make_shared<OutcomeModel>(rt, "pool", OutcomeSettings{.expert_skew = skew}));
    std::vector<hal::RoutedExpert> routed;
    for (const std::int64_t tokens : {1, 50, 200, 1, 3, 200, 50}) {
      outcomes.route_tokens(tokens, 8, 256, routed);
      std::int64_t pairs = 0;
      for (std::size_t i = 0; i < routed.size(); ++i) {
        if (i > 0) {
          EXPECT_LT(routed[i - 1].expert, routed[i].expert) << tokens << " tokens";
        }
        EXPECT_GE(routed[i].tokens, 1);
        EXPECT_LE(routed[i].tokens, tokens);  // an expert at most once per token
        pairs += routed[i].tokens;
      }
      EXPECT_EQ(pairs, tokens * 8) << tokens << " tokens, skew " << skew;
      EXPECT_GE(routed.size(), 8u);
    }
  }
}

}  // namespace
}  // namespace nvl::fakegpu
