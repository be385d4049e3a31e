// Each routing policy on a hand-made situation where the right choice is known.
#include <vector>

#include <gtest/gtest.h>

#include "engine/router/prefix_index.h"
#include "engine/router/routing_policy.h"

namespace nvl::engine {
namespace {

KvEvent stored(std::int32_t rank, BlockHash h, KvTier tier = KvTier::gpu) {
  return KvEvent{KvEvent::Kind::stored, tier, rank, h};
}

TEST(PrefixIndex, TracksLongestPrefixPerRankAndTier) {
  PrefixIndex idx(3);
  for (BlockHash h : {1, 2, 3}) idx.apply(stored(0, h));
  for (BlockHash h : {1, 2}) idx.apply(stored(1, h));
  idx.apply(stored(1, 3, KvTier::grace));
  const std::vector<BlockHash> prompt = {1, 2, 3, 4};
  const auto m = idx.match(prompt);
  EXPECT_EQ(m[0].gpu_blocks, 3);
  EXPECT_EQ(m[1].gpu_blocks, 2);
  EXPECT_EQ(m[1].grace_blocks, 3);
  EXPECT_EQ(m[2].gpu_blocks, 0);
  EXPECT_EQ(idx.best_match(prompt), 3);
  idx.apply(KvEvent{KvEvent::Kind::removed, KvTier::gpu, 0, 2});
  EXPECT_EQ(idx.match(prompt)[0].gpu_blocks, 1);
  idx.clear();
  EXPECT_EQ(idx.best_match(prompt), 0);
  EXPECT_THROW(idx.apply(stored(7, 1)), std::invalid_argument);
  EXPECT_THROW(PrefixIndex(0), std::invalid_argument);
}

TEST(RoutingPolicy, RoundRobinSkipsUnhealthyRanks) {
  std::vector<RankLoad> loads(3);
  loads[1].healthy = false;
  auto p = make_routing_policy("round_robin");
  std::vector<std::int32_t> picks;
  for (int i = 0; i < 4; ++i) picks.push_back(p->choose(RouteInput{loads, {}, 0}));
  EXPECT_EQ(picks, (std::vector<std::int32_t>{0, 2, 0, 2}));
  for (auto& l : loads) l.healthy = false;
  EXPECT_EQ(p->choose(RouteInput{loads, {}, 0}), -1);
}

TEST(RoutingPolicy, LeastLoadPicksFewestRequestsThenFewestTokens) {
  std::vector<RankLoad> loads = {{.running = 5}, {.running = 2, .tokens_in_flight = 900}, {.running = 2, .tokens_in_flight = 100}};
  EXPECT_EQ(make_routing_policy("least_load")->choose(RouteInput{loads, {}, 0}), 2);
  EXPECT_EQ(make_routing_policy("pooled")->choose(RouteInput{loads, {}, 0}), 2);
}

TEST(RoutingPolicy, CacheAwareFollowsTheHitWhenBalanced) {
  std::vector<RankLoad> loads = {{.running = 3}, {.running = 4}, {.running = 2}};
  std::vector<RankMatch> matches = {{1, 1}, {8, 8}, {0, 0}};
  EXPECT_EQ(make_routing_policy("cache_aware")->choose(RouteInput{loads, matches, 10}), 1);
}

TEST(RoutingPolicy, CacheAwareFallsBackToLoadWhenTheHitIsSmall) {
  std::vector<RankLoad> loads = {{.running = 3}, {.running = 4}, {.running = 2}};
  std::vector<RankMatch> matches = {{1, 1}, {2, 2}, {0, 0}};
  EXPECT_EQ(make_routing_policy("cache_aware")->choose(RouteInput{loads, matches, 10}), 2);
}

TEST(RoutingPolicy, CacheAwareRebalancesWhenRanksDrift) {
  std::vector<RankLoad> loads = {{.running = 100}, {.running = 10}};
  std::vector<RankMatch> matches = {{10, 10}, {0, 0}};
  EXPECT_EQ(make_routing_policy("cache_aware")->choose(RouteInput{loads, matches, 10}), 1);
  EXPECT_THROW(make_routing_policy("random"), std::invalid_argument);
}

}  // namespace
}  // namespace nvl::engine
