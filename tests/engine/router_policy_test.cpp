// Each routing policy on a hand-made situation where the right choice is known.
#include <vector>

#include <gtest/gtest.h>

#include "engine/router/prefix_index.h"
#include "engine/router/router.h"
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

TEST(Router, ShortUncachedPromptsStayOnTheRankLongOnesGoToThePrefillWorker) {
  Router router(2, RouterConfig{});  // threshold 2,048 tokens, 64-token blocks
  std::vector<RankLoad> loads(2);
  std::vector<BlockHash> prompt;
  for (BlockHash h = 1; h <= 100; ++h) prompt.push_back(h);  // 6,400 tokens
  auto d = router.route(prompt, 6'400, loads);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->path, PrefillPath::prefill_worker);
  EXPECT_EQ(d->uncached_tokens, 6'400);
  // Rank 1 now holds the first 80 blocks (5,120 tokens): 1,280 left to compute, under the threshold.
  for (BlockHash h = 1; h <= 80; ++h) router.on_kv_event(stored(1, h));
  d = router.route(prompt, 6'400, loads);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->path, PrefillPath::local);
  EXPECT_EQ(d->cached_tokens, 5'120);
  EXPECT_EQ(d->rank, 1) << "cache-aware: the rank holding the prefix";
  EXPECT_EQ(router.routed(PrefillPath::local), 1u);
  EXPECT_EQ(router.routed(PrefillPath::prefill_worker), 1u);
  // Exactly at the threshold goes to the prefill worker.
  router.restart();
  std::vector<BlockHash> at_threshold(prompt.begin(), prompt.begin() + 32);
  EXPECT_EQ(router.route(at_threshold, 2'048, loads)->path, PrefillPath::prefill_worker);
  EXPECT_EQ(router.route(at_threshold, 2'047, loads)->path, PrefillPath::local);
}

TEST(Router, WithoutAPrefillWorkerEverythingIsLocalAndNoHealthyRankIsNoRoute) {
  RouterConfig local_only;
  local_only.prefill_worker = false;
  Router router(2, local_only);
  std::vector<RankLoad> loads(2);
  const std::vector<BlockHash> prompt(200, 7);
  EXPECT_EQ(router.route(prompt, 12'800, loads)->path, PrefillPath::local);
  for (auto& l : loads) l.healthy = false;
  EXPECT_FALSE(router.route(prompt, 12'800, loads));
  RouterConfig negative;
  negative.prefill_threshold_tokens = -1;
  EXPECT_THROW(Router(2, negative), std::invalid_argument);
}

}  // namespace
}  // namespace nvl::engine
