#include <cstdint>
#include <random>
#include <unordered_map>

#include <gtest/gtest.h>

#include "engine/kv/block_hash_map.h"

using namespace nvl::engine;

TEST(BlockHashMap, FindsInsertsAndErasesLikeAnUnorderedMap) {
  BlockHashMap<std::int32_t> map;
  std::unordered_map<BlockHash, std::int32_t> want;
  std::mt19937_64 rng(7);
  // Few distinct keys among many operations: entries come and go, and probe runs get long and broken.
  std::uniform_int_distribution<BlockHash> key_of(0, 4'000);
  for (int step = 0; step < 200'000; ++step) {
    const BlockHash k = key_of(rng) * 0x100000001ull;  // keys that differ only in high and low bits
    switch (rng() % 3) {
      case 0: {
        bool inserted = false;
        std::int32_t& v = map.try_emplace(k, inserted);
        EXPECT_EQ(inserted, !want.contains(k));
        v = step;
        want[k] = step;
        break;
      }
      case 1:
        EXPECT_EQ(map.erase(k), want.erase(k) == 1);
        break;
      default: {
        const std::int32_t* v = map.find(k);
        const auto it = want.find(k);
        ASSERT_EQ(v != nullptr, it != want.end()) << "key " << k;
        if (v != nullptr) {
          EXPECT_EQ(*v, it->second);
        }
      }
    }
    ASSERT_EQ(map.size(), want.size());
  }
  for (const auto& [k, v] : want) {
    const std::int32_t* got = map.find(k);
    ASSERT_NE(got, nullptr) << "lost key " << k;
    EXPECT_EQ(*got, v);
  }
}

TEST(BlockHashMap, KeyZeroIsAnOrdinaryKeyAndClearEmpties) {
  BlockHashMap<int> map;
  EXPECT_FALSE(map.contains(0));
  EXPECT_FALSE(map.erase(0));
  map[0] = 5;
  map[1] = 6;
  EXPECT_EQ(*map.find(0), 5);
  EXPECT_TRUE(map.erase(0));
  EXPECT_FALSE(map.contains(0));
  EXPECT_EQ(*map.find(1), 6);
  map.clear();
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.find(1), nullptr);
  map[1] = 7;
  EXPECT_EQ(*map.find(1), 7);
}
