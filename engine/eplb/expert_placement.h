#pragma once
// Expert-parallel load balancing (EPLB): which EP rank holds which routed experts, with redundant
// copies of the popular ones, as DeepSeek's EPLB does. The MoE part of a step takes as long as its
// most loaded rank, so the placement's imbalance (max rank load / mean) is a throughput cost.
#include <cstdint>
#include <vector>

#include "emu/rt/rng.h"

namespace nvl::engine {

// Share of routed tokens each expert receives; sums to 1.
using ExpertLoad = std::vector<double>;

// Every expert equally popular.
ExpertLoad uniform_expert_load(std::int64_t experts);
// Popularity from observed routing counts (e.g. a window of recent steps).
ExpertLoad expert_load_from_counts(const std::vector<std::uint64_t>& counts);

class ExpertPlacement {
 public:
  // Spreads `load.size()` experts plus `redundant` copies evenly over `ep_ranks`: the most loaded
  // experts get the copies, then replicas go heaviest first to the least loaded rank with room.
  // Throws std::invalid_argument when the slots do not divide evenly over the ranks.
  ExpertPlacement(const ExpertLoad& load, std::int64_t ep_ranks, std::int64_t redundant);

  std::int64_t ranks() const { return static_cast<std::int64_t>(rank_experts_.size()); }
  std::int64_t slots_per_rank() const { return slots_per_rank_; }
  const std::vector<std::int64_t>& experts_on(std::int64_t rank) const;
  std::int64_t replicas_of(std::int64_t expert) const;
  // Expected share of routed tokens each rank serves under `load` (copies split an expert's tokens).
  std::vector<double> rank_shares(const ExpertLoad& load) const;
  // Max rank share over the mean: 1 is perfect balance.
  double imbalance(const ExpertLoad& load) const;
  // Expert weights that must move to go from this placement to `next` (slots whose expert changes).
  std::int64_t slots_changed_to(const ExpertPlacement& next) const;
  // The experts only `rank` holds: lost with it (the group must reload them or shrink); the others
  // it held have copies elsewhere that take over.
  std::vector<std::int64_t> experts_lost_with(std::int64_t rank) const;
  // The placement after `rank` leaves the group (ranks above it move down one). Each expert only it
  // held takes the slot of a redundant copy (the one whose loss leaves the busiest affected rank
  // lightest); without a copy to give up, the least loaded rank takes an extra slot (the group shrinks
  // onto fewer ranks: uneven slots, stated by slots_per_rank()).
  ExpertPlacement without_rank(std::int64_t rank, const ExpertLoad& load) const;

 private:
  ExpertPlacement() = default;

  std::int64_t slots_per_rank_ = 0;  // the most any rank holds
  std::vector<std::vector<std::int64_t>> rank_experts_;  // rank -> experts held (a copy each)
  std::vector<std::int64_t> replicas_;                    // expert -> copies
};

}  // namespace nvl::engine
