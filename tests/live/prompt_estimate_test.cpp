#include "emu/live/prompt_estimate.h"

#include <gtest/gtest.h>

#include "emu/live/filler_text.h"

namespace nvl::emu::live {
namespace prompt_estimate_test {

TEST(PromptEstimate, CountsFourBytesPerTokenRoundedUp) {
  EXPECT_EQ(estimate_prompt("", 16).tokens, 1);  // every prompt is at least one token
  EXPECT_EQ(estimate_prompt("abcd", 16).tokens, 1);
  EXPECT_EQ(estimate_prompt("abcde", 16).tokens, 2);
  EXPECT_EQ(estimate_prompt(std::string(4000, 'x'), 16).tokens, 1000);
}

TEST(PromptEstimate, HashesOnlyFullBlocks) {
  // Block of 16 tokens = 64 bytes.
  EXPECT_TRUE(estimate_prompt(std::string(63, 'a'), 16).block_hashes.empty());
  EXPECT_EQ(estimate_prompt(std::string(64, 'a'), 16).block_hashes.size(), 1u);
  EXPECT_EQ(estimate_prompt(std::string(64 * 5 + 10, 'a'), 16).block_hashes.size(), 5u);
}

TEST(PromptEstimate, SharedLeadingTextSharesLeadingHashes) {
  const std::string system(64 * 3, 's');
  const auto a = estimate_prompt(system + std::string(128, 'a'), 16);
  const auto b = estimate_prompt(system + std::string(128, 'b'), 16);
  ASSERT_EQ(a.block_hashes.size(), 5u);
  ASSERT_EQ(b.block_hashes.size(), 5u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.block_hashes[i], b.block_hashes[i]) << i;
  EXPECT_NE(a.block_hashes[3], b.block_hashes[3]);
  EXPECT_NE(a.block_hashes[4], b.block_hashes[4]);
}

TEST(PromptEstimate, HashesChainSoEqualBlocksAtDifferentDepthsDiffer) {
  const auto e = estimate_prompt(std::string(64 * 2, 'z'), 16);
  ASSERT_EQ(e.block_hashes.size(), 2u);
  EXPECT_NE(e.block_hashes[0], e.block_hashes[1]);
  // A different first block changes every later hash, even when the later text is the same.
  const auto f = estimate_prompt(std::string(64, 'y') + std::string(64, 'z'), 16);
  EXPECT_NE(e.block_hashes[1], f.block_hashes[1]);
}

TEST(FillerText, IsDeterministicPerSeedAndPrompt) {
  const FillerText a(7, "hello"), b(7, "hello"), other_prompt(7, "hullo"), other_seed(8, "hello");
  EXPECT_EQ(a.tokens(0, 50), b.tokens(0, 50));
  EXPECT_NE(a.tokens(0, 50), other_prompt.tokens(0, 50));
  EXPECT_NE(a.tokens(0, 50), other_seed.tokens(0, 50));
  // Pieces add up to the whole, however the tokens arrive.
  EXPECT_EQ(a.tokens(0, 20) + a.tokens(20, 30), a.tokens(0, 50));
}

}  // namespace prompt_estimate_test
}  // namespace nvl::emu::live
