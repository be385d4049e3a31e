// The prefix index against a plain model of what each rank holds: every rank's longest prefix, per
// tier, after random stores, removals and clears of a rank's tier.
#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/router/prefix_index.h"

namespace nvl::engine {
namespace prefix_index_test {

// Events come from any rank, or (`window` > 0) from `window` ranks in a row, moved along each round, so
// that a block gains holders a few at a time: listed while it has at most seven (rank, tier) entries,
// then bits; at 512 ranks most words of a match are empty.
void expect_matches_after_random_stores_removals_and_clears(const std::int32_t kRanks, const std::int32_t window = 0) {
  constexpr BlockHash kChain = 40;
  PrefixIndex idx(kRanks);
  std::vector<std::set<BlockHash>> gpu(kRanks), grace(kRanks);
  std::mt19937_64 rng(11);
  // Ranks hold the front of one chain (0, 1, 2, ...) more often than its tail, as prompts sharing a prefix do.
  const auto block = [&] { return static_cast<BlockHash>(std::min(rng() % kChain, rng() % kChain)); };
  std::vector<BlockHash> prompt(kChain);
  for (BlockHash i = 0; i < kChain; ++i) prompt[i] = i;
  for (int round = 0; round < 300; ++round) {
    for (int e = 0; e < 200; ++e) {
      const auto rank = window == 0 ? static_cast<std::int32_t>(rng() % kRanks)
                                    : static_cast<std::int32_t>((round * 37 + static_cast<std::int32_t>(rng() % window)) % kRanks);
      const KvTier tier = rng() % 3 == 0 ? KvTier::grace : KvTier::gpu;
      const bool store = rng() % 3 != 0;
      const BlockHash h = block();
      auto& held = (tier == KvTier::gpu ? gpu : grace)[static_cast<std::size_t>(rank)];
      if (rng() % 500 == 0) {  // the rank's prefix cache of this tier is reset
        held.clear();
        idx.apply(KvEvent{KvEvent::Kind::cleared, tier, rank, 0});
        continue;
      }
      if (store) {
        held.insert(h);
      } else {
        held.erase(h);
      }
      idx.apply(KvEvent{store ? KvEvent::Kind::stored : KvEvent::Kind::removed, tier, rank, h});
    }
    const std::size_t len = rng() % (kChain + 1);
    const std::span<const BlockHash> hashes(prompt.data(), len);
    const std::vector<RankMatch> got = idx.match(hashes);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kRanks));
    std::int64_t best = 0;
    while (best < static_cast<std::int64_t>(len)) {
      bool anyone = false;
      for (std::int32_t r = 0; r < kRanks; ++r) {
        anyone = anyone || gpu[static_cast<std::size_t>(r)].contains(prompt[static_cast<std::size_t>(best)]) ||
                 grace[static_cast<std::size_t>(r)].contains(prompt[static_cast<std::size_t>(best)]);
      }
      if (!anyone) break;
      ++best;
    }
    EXPECT_EQ(idx.best_match(hashes), best) << "round " << round;
    std::int64_t longest = -1;
    idx.match(hashes, &longest);
    EXPECT_EQ(longest, best) << "round " << round << ", from match()";
    for (std::int32_t r = 0; r < kRanks; ++r) {
      const auto k = static_cast<std::size_t>(r);
      std::int64_t on_gpu = 0;
      while (on_gpu < static_cast<std::int64_t>(len) && gpu[k].contains(prompt[static_cast<std::size_t>(on_gpu)])) ++on_gpu;
      std::int64_t anywhere = 0;
      while (anywhere < static_cast<std::int64_t>(len) && (gpu[k].contains(prompt[static_cast<std::size_t>(anywhere)]) ||
                                                           grace[k].contains(prompt[static_cast<std::size_t>(anywhere)]))) {
        ++anywhere;
      }
      ASSERT_EQ(got[k].gpu_blocks, on_gpu) << "rank " << r << " round " << round;
      ASSERT_EQ(got[k].grace_blocks, anywhere) << "rank " << r << " round " << round;
    }
  }
}

TEST(PrefixIndex, MatchesEveryRanksLongestPrefixAfterRandomStoresRemovalsAndClears) {
  // One rank; one 64-bit word of ranks exactly; more than one, the last partly used; eight racks of DP64.
  for (const std::int32_t ranks : {1, 64, 70, 512}) {
    SCOPED_TRACE(ranks);
    expect_matches_after_random_stores_removals_and_clears(ranks);
    // Holders gathered three and five ranks at a time.
    expect_matches_after_random_stores_removals_and_clears(ranks, 3);
    expect_matches_after_random_stores_removals_and_clears(ranks, 5);
  }
}

TEST(PrefixIndex, RefusesNoRanksOrMoreThanItsEntriesTellApart) {
  for (const std::int32_t ranks : {0, PrefixIndex::kMaxRanks + 1}) {
    try {
      PrefixIndex idx(ranks);
      FAIL() << "no error for " << ranks;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "prefix index: expected 1 to 32768 ranks, got " + std::to_string(ranks));
    }
  }
  EXPECT_NO_THROW(PrefixIndex(PrefixIndex::kMaxRanks));
}

}  // namespace prefix_index_test
}  // namespace nvl::engine
