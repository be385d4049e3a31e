#include <vector>

#include <gtest/gtest.h>

#include "engine/kv/kv_cache_manager.h"

namespace nvl::engine {
namespace kv_cache_manager_test {

KvCacheConfig config(GraceTierPolicy policy, std::int64_t gpu_blocks = 8, std::int64_t grace_blocks = 16) {
  return KvCacheConfig{.rank = 3, .gpu_blocks = gpu_blocks, .grace_blocks = grace_blocks, .block_tokens = 4,
                       .block_bytes = 1000, .grace_policy = policy};
}

std::vector<BlockHash> chain(BlockHash root, int n) {
  std::vector<BlockHash> h;
  for (int i = 0; i < n; ++i) h.push_back(root * 1000 + static_cast<BlockHash>(i));
  return h;
}

TEST(KvCacheManager, SecondRequestSharesThePublishedPrefix) {
  KvCacheManager kv(config(GraceTierPolicy::off));
  std::vector<KvEvent> events;
  kv.subscribe([&](const KvEvent& e) { events.push_back(e); });
  const auto prompt = chain(1, 3);
  auto first = kv.admit(1, prompt, 12);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->compute_tokens, 12);
  kv.publish(1, prompt, 12);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, KvEvent::Kind::stored);
  EXPECT_EQ(events[0].rank, 3);
  // Same 12-token prompt: two full blocks are shared; the block holding the last token is recomputed.
  auto second = kv.admit(2, prompt, 12);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->gpu_hit_tokens, 8);
  EXPECT_EQ(second->compute_tokens, 4);
  kv.check_invariants();
}

TEST(KvCacheManager, AdmissionFailsCleanlyWhenTheGpuIsFull) {
  KvCacheManager kv(config(GraceTierPolicy::off, 4));
  ASSERT_TRUE(kv.admit(1, chain(1, 3), 12));
  EXPECT_FALSE(kv.admit(2, chain(2, 2), 8));  // needs 2, one left
  EXPECT_FALSE(kv.holds(2));
  EXPECT_TRUE(kv.extend(1, 16));
  EXPECT_FALSE(kv.extend(1, 17));
  kv.check_invariants();
  kv.release(1);
  EXPECT_EQ(kv.gpu_available_blocks(), 4);
}

TEST(KvCacheManager, WriteBackSpillsEvictedBlocksToGraceAndLoadsThemBack) {
  KvCacheManager kv(config(GraceTierPolicy::write_back, 4));
  std::vector<KvEvent> events;
  kv.subscribe([&](const KvEvent& e) { events.push_back(e); });
  const auto a = chain(1, 3);
  ASSERT_TRUE(kv.admit(1, a, 13));  // 4 blocks: the whole GPU
  kv.publish(1, a, 13);
  kv.release(1);
  EXPECT_TRUE(kv.take_copies().empty());  // write-back: nothing copied until an eviction
  ASSERT_TRUE(kv.admit(2, chain(2, 3), 16));  // evicts a's three cached blocks
  kv.release(2);
  const auto spills = kv.take_copies();
  ASSERT_EQ(spills.size(), 1u);
  EXPECT_EQ(spills[0].direction, KvCopy::Direction::gpu_to_grace);
  EXPECT_EQ(spills[0].blocks, 3);
  EXPECT_EQ(spills[0].bytes, 3000u);
  const PrefixMatch m = kv.match(a);
  EXPECT_EQ(m.gpu_blocks, 0);
  EXPECT_EQ(m.grace_blocks, 3);
  auto plan = kv.admit(3, a, 13);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->grace_hit_tokens, 12);
  EXPECT_EQ(plan->compute_tokens, 1);
  const auto loads = kv.take_copies();
  ASSERT_FALSE(loads.empty());
  EXPECT_EQ(loads.back().direction, KvCopy::Direction::grace_to_gpu);
  EXPECT_EQ(loads.back().blocks, 3);
  int grace_stored = 0;
  for (const auto& e : events) grace_stored += e.tier == KvTier::grace && e.kind == KvEvent::Kind::stored;
  EXPECT_EQ(grace_stored, 3);
  kv.check_invariants();
}

TEST(KvCacheManager, AResetDropsTheCachedGpuBlocksInOneEventOnceNoRequestHoldsAny) {
  KvCacheManager kv(config(GraceTierPolicy::write_back, 8));
  std::vector<KvEvent> events;
  kv.subscribe([&](const KvEvent& e) { events.push_back(e); });
  const auto a = chain(1, 3);
  ASSERT_TRUE(kv.admit(1, a, 13));
  kv.publish(1, a, 13);
  events.clear();
  EXPECT_FALSE(kv.reset_prefix_cache()) << "request 1 still holds its blocks: refused, as vLLM refuses";
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(kv.match(a).gpu_blocks, 3);
  kv.release(1);
  kv.take_copies();
  EXPECT_TRUE(kv.reset_prefix_cache());
  ASSERT_EQ(events.size(), 1u) << "one cleared event, not a removed event per block";
  EXPECT_EQ(events[0].kind, KvEvent::Kind::cleared);
  EXPECT_EQ(events[0].tier, KvTier::gpu);
  EXPECT_EQ(events[0].rank, 3);
  // Gone, and not written back to Grace as an eviction would have been.
  EXPECT_EQ(kv.match(a).grace_blocks, 0);
  EXPECT_TRUE(kv.take_copies().empty());
  auto again = kv.admit(2, a, 13);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->compute_tokens, 13);
  kv.check_invariants();
}

TEST(KvCacheManager, WriteThroughCopiesOnPublish) {
  KvCacheManager kv(config(GraceTierPolicy::write_through));
  const auto a = chain(5, 2);
  ASSERT_TRUE(kv.admit(1, a, 9));
  kv.publish(1, a, 4);  // one block done so far (chunked prefill)
  kv.publish(1, a, 9);
  const auto copies = kv.take_copies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].blocks, 2);
  EXPECT_EQ(kv.match(a).gpu_blocks, 2);
  EXPECT_TRUE(kv.grace().contains(a[1]));
}

TEST(KvCacheManager, DrainReturnsEveryCountToBaseline) {
  KvCacheManager kv(config(GraceTierPolicy::write_back, 16, 8));
  for (RequestId id = 1; id <= 40; ++id) {
    const auto prompt = chain(id % 6, 3);
    if (!kv.admit(id, prompt, 12)) continue;
    kv.publish(id, prompt, 12);
    kv.extend(id, 20);
    kv.release(id);
  }
  kv.clear_cached();
  kv.check_invariants();
  EXPECT_EQ(kv.gpu().free_blocks(), 16);
  EXPECT_EQ(kv.grace().free_blocks(), 8);
}

TEST(KvCacheManager, MisuseIsALogicError) {
  KvCacheManager kv(config(GraceTierPolicy::off));
  ASSERT_TRUE(kv.admit(1, chain(1, 1), 4));
  EXPECT_THROW(kv.admit(1, chain(1, 1), 4), std::logic_error);
  EXPECT_THROW(kv.extend(9, 4), std::logic_error);
  EXPECT_THROW(kv.admit(2, chain(1, 1), 0), std::invalid_argument);
}

}  // namespace kv_cache_manager_test
}  // namespace nvl::engine
