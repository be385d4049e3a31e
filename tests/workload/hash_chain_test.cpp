// Hash chains share storage along a conversation, namespaces keep sources apart, and re-blocking keeps
// the prefix property.
#include <vector>

#include <gtest/gtest.h>

#include "emu/workload/block_namespace.h"
#include "emu/workload/hash_chain_builder.h"
#include "emu/workload/reblock.h"

namespace nvl::emu {
namespace hash_chain_test {

std::vector<std::uint64_t> to_vec(const HashChain& c) { return {c.ids().begin(), c.ids().end()}; }

TEST(HashChainBuilder, ExtendingPromptsShareStorageAndDivergingOnesCopy) {
  HashChainBuilder b;
  const std::vector<std::uint64_t> a{1, 2, 3};
  const std::vector<std::uint64_t> ab{1, 2, 3, 4, 5};
  const std::vector<std::uint64_t> fork{1, 2, 9};
  const HashChain c1 = b.assign(a);
  const HashChain c2 = b.assign(ab);
  EXPECT_EQ(c1.ids().data(), c2.ids().data());  // one vector for both
  const HashChain c3 = b.assign(fork);
  EXPECT_NE(c3.ids().data(), c2.ids().data());
  EXPECT_EQ(to_vec(c1), a);  // earlier snapshots keep their ids
  EXPECT_EQ(to_vec(c2), ab);
  EXPECT_EQ(to_vec(c3), fork);
  const HashChain c4 = b.assign(std::vector<std::uint64_t>{1, 2});  // a prefix of what is stored
  EXPECT_EQ(c4.ids().data(), c3.ids().data());
  EXPECT_EQ(c4.size(), 2u);
}

TEST(HashChainBuilder, TruncateThenPushLeavesSnapshotsAlone) {
  HashChainBuilder b;
  for (std::uint64_t i = 0; i < 4; ++i) b.push(i);
  const HashChain before = b.snapshot();
  b.truncate(2);
  b.push(42);
  EXPECT_EQ(to_vec(before), (std::vector<std::uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(to_vec(b.snapshot()), (std::vector<std::uint64_t>{0, 1, 42}));
}

TEST(BlockNamespace, SameLocalIdDiffersAcrossNamespacesAndIsStable) {
  const BlockNamespace a("claude-code/trace_0001.json");
  const BlockNamespace b("claude-code/trace_0002.json");
  EXPECT_NE(a.hash(1), b.hash(1));
  EXPECT_EQ(a.hash(1), BlockNamespace("claude-code/trace_0001.json").hash(1));
  EXPECT_NE(a.hash(1), a.hash(2));
}

TEST(Reblock, SameSizeKeepsFullBlocksOnly) {
  const std::vector<std::uint64_t> h{10, 11, 12};
  // 2.5 blocks of 64 tokens: the partial last block is dropped.
  EXPECT_EQ(reblock(h, 160, 64, 64), (std::vector<std::uint64_t>{10, 11}));
}

TEST(Reblock, SmallerBlocksKeepThePrefixProperty) {
  const std::vector<std::uint64_t> x{1, 2, 3};
  const std::vector<std::uint64_t> y{1, 2, 7};  // same first two 512-token blocks
  const auto rx = reblock(x, 3 * 512, 512, 64);
  const auto ry = reblock(y, 3 * 512, 512, 64);
  ASSERT_EQ(rx.size(), 24u);
  for (std::size_t j = 0; j < 16; ++j) EXPECT_EQ(rx[j], ry[j]) << j;
  for (std::size_t j = 16; j < 24; ++j) EXPECT_NE(rx[j], ry[j]) << j;
  EXPECT_EQ(rx, reblock(x, 3 * 512, 512, 64));  // deterministic
  // Within one source block, positions differ.
  EXPECT_NE(rx[0], rx[1]);
}

TEST(Reblock, LargerBlocksEndAtTheCoveringSourceBlock) {
  const std::vector<std::uint64_t> x{1, 2, 3, 4, 5};
  const std::vector<std::uint64_t> y{1, 2, 3, 4, 6};
  // 5 blocks of 64 = 320 tokens -> 2 blocks of 128 (the fifth source block is not covered by a full one).
  const auto rx = reblock(x, 320, 64, 128);
  EXPECT_EQ(rx.size(), 2u);
  EXPECT_EQ(rx, reblock(y, 320, 64, 128));
  // A partial Mooncake-style prompt: 600 tokens in 2 blocks of 512 -> 9 full blocks of 64.
  EXPECT_EQ(reblock(std::vector<std::uint64_t>{1, 2}, 600, 512, 64).size(), 9u);
}

}  // namespace hash_chain_test
}  // namespace nvl::emu
