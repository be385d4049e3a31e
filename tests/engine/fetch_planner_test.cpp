// Remote prefix fetch vs recompute, on both sides of the break-even worked out by hand.
#include <vector>

#include <gtest/gtest.h>

#include "engine/router/fetch_planner.h"

namespace nvl::engine {
namespace fetch_planner_test {

// DeepSeek-V3 FP8 KV: 35,136 bytes a token (REFERENCE.md §2); 64-token blocks.
constexpr std::uint64_t kKvBytes = 35'136;
constexpr std::int64_t kBlock = 64;

FetchCosts costs(double recompute_tokens_per_s) {
  FetchCosts c;
  c.nvlink_bytes_per_s = 720e9;
  c.rdma_bytes_per_s = 90e9;
  c.fetch_overhead = rt::us(30);
  c.recompute_tokens_per_s = recompute_tokens_per_s;
  return c;
}

TEST(FetchPlanner, FetchesFromAPeerGpuWhenCheaperThanRecomputing) {
  // Rank 0 holds nothing; rank 1 holds 100 blocks (6,400 tokens, 224.9 MB) on its GPU.
  const std::vector<RankMatch> m = {{0, 0}, {100, 100}};
  // Fetch: 30 us + 224.9 MB / 720 GB/s = 342 us. Recompute at 50,000 tok/s: 128 ms.
  const FetchDecision d = plan_fetch(m, 0, kBlock, kKvBytes, costs(50'000));
  EXPECT_EQ(d.source, PrefixSource::peer_gpu);
  EXPECT_EQ(d.from_rank, 1);
  EXPECT_EQ(d.blocks, 100);
  EXPECT_NEAR(d.fetch_time.seconds(), 30e-6 + 6'400.0 * kKvBytes / 720e9, 1e-9);
  EXPECT_NEAR(d.recompute_time.seconds(), 0.128, 1e-9);
}

TEST(FetchPlanner, APeerGpuPrefixOnBothSidesOfTheBreakEven) {
  const std::vector<RankMatch> m = {{0, 0}, {100, 100}};
  // Fetch over NVLink: 30 us + 224.9 MB / 720 GB/s = 342 us; break-even recompute rate 6,400 / 342 us.
  const double break_even = 6'400.0 / (30e-6 + 6'400.0 * kKvBytes / 720e9);
  EXPECT_EQ(plan_fetch(m, 0, kBlock, kKvBytes, costs(break_even * 0.95)).source, PrefixSource::peer_gpu);
  EXPECT_EQ(plan_fetch(m, 0, kBlock, kKvBytes, costs(break_even * 1.05)).source, PrefixSource::none);
}

TEST(FetchPlanner, OnePoolReadsAPeerGpuPrefixWhateverItCostsButNotAPeersGrace) {
  FetchCosts pool = costs(1e12);  // recomputing would be far cheaper
  pool.gpu_pool = true;
  const FetchDecision d = plan_fetch(std::vector<RankMatch>{{0, 0}, {100, 100}}, 0, kBlock, kKvBytes, pool);
  EXPECT_EQ(d.source, PrefixSource::peer_gpu);
  EXPECT_EQ(d.blocks, 100);
  pool.recompute_tokens_per_s = 0;
  EXPECT_EQ(plan_fetch(std::vector<RankMatch>{{0, 0}, {100, 100}}, 0, kBlock, kKvBytes, pool).source,
            PrefixSource::peer_gpu);
  // Grace memory is not part of the GPU pool: its fetch is still weighed against recomputing.
  pool.recompute_tokens_per_s = 1e12;
  EXPECT_EQ(plan_fetch(std::vector<RankMatch>{{0, 0}, {0, 100}}, 0, kBlock, kKvBytes, pool).source, PrefixSource::none);
}

TEST(FetchPlanner, RecomputesWhenTheFetchWouldBeSlower) {
  const std::vector<RankMatch> m = {{0, 0}, {0, 100}};  // only in rank 1's Grace memory
  // Fetch over RDMA: 30 us + 224.9 MB / 90 GB/s = 2.53 ms. Break-even recompute rate: 6,400 / 2.53 ms.
  const double break_even = 6'400.0 / (30e-6 + 6'400.0 * kKvBytes / 90e9);
  EXPECT_EQ(plan_fetch(m, 0, kBlock, kKvBytes, costs(break_even * 0.9)).source, PrefixSource::peer_grace);
  EXPECT_EQ(plan_fetch(m, 0, kBlock, kKvBytes, costs(break_even * 1.1)).source, PrefixSource::none);
}

TEST(FetchPlanner, PrefersAGpuCopyAndIgnoresWhatTheRankAlreadyHas) {
  const std::vector<RankMatch> m = {{40, 40}, {0, 80}, {80, 80}};
  const FetchDecision d = plan_fetch(m, 0, kBlock, kKvBytes, costs(10'000));
  EXPECT_EQ(d.source, PrefixSource::peer_gpu);
  EXPECT_EQ(d.from_rank, 2);
  EXPECT_EQ(d.blocks, 40);
  EXPECT_EQ(plan_fetch(std::vector<RankMatch>{{50, 50}, {50, 50}}, 0, kBlock, kKvBytes, costs(10'000)).source,
            PrefixSource::none);
  EXPECT_EQ(plan_fetch(m, 0, kBlock, kKvBytes, costs(0)).source, PrefixSource::none);
}

}  // namespace fetch_planner_test
}  // namespace nvl::engine
