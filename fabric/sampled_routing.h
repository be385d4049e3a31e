#pragma once
// MoE all-to-all matrices as sampled expert routing gives them (what the engine will send once routing is
// drawn per step): every token of a rank picks its top-k distinct experts from a Zipf popularity, and a
// rank sends one token's hidden bytes to each other rank per expert there it picked. For the benchmarks
// and the tests that hold the fast pricing to the exact mode; seeded, so the same seed draws the same matrix.
#include <cstdint>
#include <vector>

#include "engine/hal/collectives.h"

namespace nvl::fabric {

struct SampledRouting {
  int experts = 256;
  int experts_per_rank = 4;  // expert e lives on rank e / experts_per_rank
  int top_k = 8;
  double skew = 0;  // Zipf exponent of expert popularity: expert e is picked in proportion to 1 / (e + 1)^skew
  std::uint64_t bytes_per_token = 7168;  // fp8 hidden
};

// The dispatch of ranks with tokens[r] tokens each (the group has tokens.size() ranks, which must hold
// every expert: experts == ranks * experts_per_rank).
std::vector<hal::CollectiveOp> sampled_all_to_all(const SampledRouting& routing, const std::vector<int>& tokens,
                                                  std::uint64_t seed);

}  // namespace nvl::fabric
