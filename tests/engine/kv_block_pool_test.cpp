#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "engine/kv/kv_block_pool.h"

namespace nvl::engine {
namespace kv_block_pool_test {

TEST(KvBlockPool, PublishedPrefixIsFoundAndShared) {
  KvBlockPool pool("gpu0", 8, 64);
  auto a = *pool.allocate(3);
  const std::vector<BlockHash> chain = {11, 12, 13};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(pool.publish(a[static_cast<std::size_t>(i)], chain[static_cast<std::size_t>(i)]));
  const std::vector<BlockHash> other = {11, 12, 99};
  EXPECT_EQ(pool.match_length(other), 2);
  auto shared = pool.acquire_prefix(other);
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[0], a[0]);
  EXPECT_EQ(pool.ref_count(a[0]), 2);
  pool.check_invariants();
}

TEST(KvBlockPool, ReleasedPublishedBlocksStayCachedUntilSpaceIsNeededLruFirst) {
  KvBlockPool pool("gpu0", 4, 16);
  std::vector<BlockHash> evicted;
  pool.on_evict([&](BlockHash h) { evicted.push_back(h); });
  auto a = *pool.allocate(2);
  pool.publish(a[0], 100);
  pool.publish(a[1], 200);
  pool.release(std::vector<BlockId>{a[1]});  // 200 becomes least recently used
  pool.release(std::vector<BlockId>{a[0]});
  EXPECT_EQ(pool.cached_blocks(), 2);
  EXPECT_EQ(pool.free_blocks(), 2);
  EXPECT_EQ(pool.available_blocks(), 4);
  auto b = *pool.allocate(3);  // two free + evicts one cached
  EXPECT_EQ(evicted, std::vector<BlockHash>{200});
  EXPECT_EQ(pool.evicted_for_space(), 1);
  EXPECT_FALSE(pool.contains(200));
  EXPECT_TRUE(pool.contains(100));
  EXPECT_FALSE(pool.allocate(2).has_value());  // one cached left: not enough, and nothing changes
  EXPECT_TRUE(pool.contains(100));
  pool.check_invariants();
  pool.release(b);
  EXPECT_EQ(pool.free_blocks(), 3);
  pool.clear_cached();
  EXPECT_EQ(pool.evicted_for_space(), 1) << "a clear is not room made for an allocation";
}

TEST(KvBlockPool, AcquireTakesACachedBlockOutOfTheLru) {
  KvBlockPool pool("gpu0", 2, 16);
  auto a = *pool.allocate(1);
  pool.publish(a[0], 7);
  pool.release(a);
  auto again = pool.acquire_prefix(std::vector<BlockHash>{7});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(pool.cached_blocks(), 0);
  EXPECT_EQ(pool.used_blocks(), 1);
  EXPECT_FALSE(pool.allocate(2).has_value());  // the pinned block cannot be evicted
  pool.check_invariants();
}

TEST(KvBlockPool, DuplicateContentStaysPrivateAndIsFreedOnRelease) {
  KvBlockPool pool("gpu0", 4, 16);
  auto a = *pool.allocate(2);
  EXPECT_TRUE(pool.publish(a[0], 5));
  EXPECT_FALSE(pool.publish(a[1], 5));
  pool.release(a);
  EXPECT_EQ(pool.cached_blocks(), 1);
  EXPECT_EQ(pool.free_blocks(), 3);
  pool.check_invariants();
}

TEST(KvBlockPool, MisuseIsALogicError) {
  KvBlockPool pool("gpu0", 2, 16);
  auto a = *pool.allocate(1);
  pool.release(a);
  EXPECT_THROW(pool.release(a), std::logic_error);
  EXPECT_THROW(pool.publish(a[0], 1), std::logic_error);
  EXPECT_THROW(pool.allocate(-1), std::invalid_argument);
  EXPECT_THROW(KvBlockPool("bad", 4, 0), std::invalid_argument);
}

TEST(KvBlockPool, BlocksNeverHandedOutAreFreeAndCannotBeReleased) {
  KvBlockPool pool("grace0", 1'000'000, 64);
  EXPECT_EQ(pool.free_blocks(), 1'000'000);
  auto a = *pool.allocate(3);
  EXPECT_EQ(a, (std::vector<BlockId>{0, 1, 2}));  // low ids first
  pool.release(std::vector<BlockId>{a[1]});
  EXPECT_EQ(*pool.allocate(1), std::vector<BlockId>{1});  // a released block is reused before a fresh one
  EXPECT_EQ(pool.free_blocks(), 1'000'000 - 3);
  EXPECT_EQ(pool.ref_count(999'999), 0);
  EXPECT_EQ(pool.hash_of(999'999), std::nullopt);
  EXPECT_THROW(pool.release(std::vector<BlockId>{500}), std::logic_error);
  EXPECT_THROW(pool.release(std::vector<BlockId>{1'000'000}), std::out_of_range);
  pool.check_invariants();
}

TEST(KvBlockPool, RandomisedUseReturnsToBaselineAfterDrain) {
  KvBlockPool pool("gpu0", 64, 16);
  std::uint64_t x = 12345;
  const auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::vector<std::vector<BlockId>> held;
  for (int step = 0; step < 5'000; ++step) {
    if (next() % 3 != 0 || held.empty()) {
      // A request: shares a prefix from a small universe of chains, allocates the rest.
      const BlockHash root = next() % 5;
      std::vector<BlockHash> chain;
      for (int i = 0; i < 6; ++i) chain.push_back(root * 100 + static_cast<BlockHash>(i));
      auto blocks = pool.acquire_prefix(chain);
      const auto need = static_cast<std::int64_t>(chain.size() - blocks.size());
      if (auto fresh = pool.allocate(need)) {
        for (std::size_t i = 0; i < fresh->size(); ++i) pool.publish((*fresh)[i], chain[blocks.size() + i]);
        blocks.insert(blocks.end(), fresh->begin(), fresh->end());
        held.push_back(blocks);
      } else {
        pool.release(blocks);
      }
    } else {
      const std::size_t i = next() % held.size();
      pool.release(held[i]);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (step % 97 == 0) pool.check_invariants();
  }
  for (auto& h : held) pool.release(h);
  pool.clear_cached();
  pool.check_invariants();
  EXPECT_EQ(pool.free_blocks(), 64);
  EXPECT_EQ(pool.used_blocks(), 0);
}

}  // namespace kv_block_pool_test
}  // namespace nvl::engine
