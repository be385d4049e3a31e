// Each routing policy on a hand-made situation where the right choice is known.
#include <vector>

#include <gtest/gtest.h>

#include "engine/router/load_view.h"
#include "engine/router/prefix_index.h"
#include "engine/router/router.h"
#include "engine/router/routing_policy.h"

namespace nvl::engine {
namespace router_policy_test {

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

TEST(RoutingPolicy, LoadWeightsDecideWhatLightestMeans) {
  // Rank 0: fewer requests but long contexts; rank 1: more requests, short ones.
  std::vector<RankLoad> loads = {{.running = 2, .tokens_in_flight = 200'000, .free_kv_blocks = 1'000},
                                 {.running = 3, .tokens_in_flight = 30'000, .free_kv_blocks = 9'000}};
  EXPECT_EQ(make_routing_policy("least_load")->choose(RouteInput{loads, {}, 0}), 0) << "requests alone";
  // 2 + 200 x 0.01 = 4 against 3 + 30 x 0.01 = 3.3.
  EXPECT_EQ(make_routing_policy("least_load", {}, LoadWeights{.tokens_in_flight_per_1k = 0.01})
                ->choose(RouteInput{loads, {}, 0}),
            1);
  // 2 - 1 x 0.5 = 1.5 against 3 - 9 x 0.5 = -1.5.
  EXPECT_EQ(make_routing_policy("pooled", {}, LoadWeights{.free_kv_per_1k_blocks = 0.5})->choose(RouteInput{loads, {}, 0}),
            1);
  EXPECT_THROW(make_routing_policy("least_load", {}, LoadWeights{.requests = -1}), std::invalid_argument);
  EXPECT_THROW(make_routing_policy("cache_aware", CacheAwareOptions{.cache_threshold = 1.5}), std::invalid_argument);
  EXPECT_THROW(make_routing_policy("cache_aware", CacheAwareOptions{.balance_rel_threshold = 0.5}), std::invalid_argument);
}

TEST(RoutingPolicy, CacheAwareBalanceThresholdsAreOptions) {
  // Out of balance by 6 requests: the default absolute threshold (32) still follows the cache; 4 does not.
  std::vector<RankLoad> loads = {{.running = 8}, {.running = 2}};
  std::vector<RankMatch> matches = {{10, 10}, {0, 0}};
  EXPECT_EQ(make_routing_policy("cache_aware")->choose(RouteInput{loads, matches, 10}), 0);
  EXPECT_EQ(make_routing_policy("cache_aware", CacheAwareOptions{.balance_abs_threshold = 4})
                ->choose(RouteInput{loads, matches, 10}),
            1);
  // A hit of 6 of 10 blocks: followed at the default 0.5, not at 0.7.
  matches = {{6, 6}, {0, 0}};
  loads = {{.running = 3}, {.running = 2}};
  EXPECT_EQ(make_routing_policy("cache_aware")->choose(RouteInput{loads, matches, 10}), 0);
  EXPECT_EQ(make_routing_policy("cache_aware", CacheAwareOptions{.cache_threshold = 0.7})
                ->choose(RouteInput{loads, matches, 10}),
            1);
}

TEST(LoadView, KeepsTheLastReportAndCountsWhatWasRoutedSince) {
  LoadView view(2);
  view.report(0, RankLoad{.running = 4, .tokens_in_flight = 5'000, .free_kv_blocks = 100}, rt::Time::zero() + rt::ms(10));
  view.routed(0, 1'280, 20);
  EXPECT_EQ(view.at(0).waiting, 1);
  EXPECT_EQ(view.at(0).running, 4);
  EXPECT_EQ(view.at(0).tokens_in_flight, 6'280);
  EXPECT_EQ(view.at(0).free_kv_blocks, 80);
  view.routed(0, 10'000, 200);
  EXPECT_EQ(view.at(0).free_kv_blocks, 0) << "never below zero";
  // A report made before the one held (delivered late) changes nothing; a newer one replaces all.
  view.report(0, RankLoad{.running = 1}, rt::Time::zero() + rt::ms(5));
  EXPECT_EQ(view.at(0).running, 4);
  view.report(0, RankLoad{.running = 6, .free_kv_blocks = 50}, rt::Time::zero() + rt::ms(20));
  EXPECT_EQ(view.at(0).running, 6);
  EXPECT_EQ(view.at(0).waiting, 0);
  EXPECT_EQ(view.at(1).requests(), 0);
  EXPECT_THROW(view.report(2, RankLoad{}, rt::Time::zero()), std::invalid_argument);
  EXPECT_THROW(LoadView(0), std::invalid_argument);
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

}  // namespace router_policy_test
}  // namespace nvl::engine
