#pragma once
// Two-batch overlap (TBO), as SGLang and DeepSeek's prefill run it: a rank's batch is cut into two
// micro-batches of about half its tokens each, so that one's MoE all-to-all can run while the other
// computes. A prefill chunk may be cut in the middle (its second part attends to the first as prior
// context, and only the second part samples), as SGLang's two-chunk split does; decodes stay whole.
#include <array>

#include "engine/exec/rank_batch.h"

namespace nvl::engine {

// The first micro-batch holds ceil(tokens / 2) tokens (or as near as whole decodes allow), the
// second the rest; either may be empty when the batch has fewer than two tokens.
std::array<RankBatch, 2> split_two_batches(const RankBatch& batch);

}  // namespace nvl::engine
