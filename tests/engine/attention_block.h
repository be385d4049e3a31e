#pragma once
// What the attention-module pricing tests share: a batch of prompts or of decodes, and the time of the
// attention block a priced kernel list holds.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "engine/exec/rank_batch.h"
#include "engine/hal/kernel.h"
#include "fakegpu/kernel_cost.h"

namespace nvl::engine::test {

// `seqs` prompts of `new_tokens` each, after `prior` cached ones.
inline RankBatch prompts(int seqs, std::int64_t new_tokens, std::int64_t prior = 0) {
  RankBatch b;
  for (int i = 0; i < seqs; ++i) b.prefills.push_back(PrefillSpan{prior, new_tokens, true});
  return b;
}

// `seqs` sequences of `context` cached tokens decoding `new_tokens` each (more than one: MTP).
inline RankBatch decodes(int seqs, std::int64_t context, std::int64_t new_tokens = 1) {
  RankBatch b;
  for (int i = 0; i < seqs; ++i) b.decodes.push_back(DecodeSpan{context, new_tokens});
  return b;
}

// The block's time: every kernel of `ks` (priced as `costs`) but the elementwise ones, which no module
// includes (the input norm); with `from_table`, each of them is expected to be priced from the table.
inline double block_ns(const std::vector<hal::KernelDesc>& ks, const std::vector<fakegpu::KernelCost>& costs,
                       bool from_table) {
  double ns = 0;
  for (std::size_t i = 0; i < ks.size(); ++i) {
    if (ks[i].kind == hal::KernelKind::elementwise) continue;
    if (from_table) {
      EXPECT_TRUE(costs[i].measured) << ks[i].name;
    }
    ns += fakegpu::price_ns(costs[i], {});
  }
  return ns;
}

}  // namespace nvl::engine::test
