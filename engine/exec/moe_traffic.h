#pragma once
// One step's MoE traffic over an EP group, from the routing its GPUs reported (hal::StepOutcomes): how
// many token-expert pairs each rank computes and over how many of its expert slots, and how many pairs
// each rank sends every other rank in the dispatch (their results come back in the combine). A token
// copy for an expert with redundant copies goes to one of them, the copies taking turns by source rank.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/eplb/expert_placement.h"
#include "engine/hal/step_outcomes.h"

namespace nvl::engine {

class MoeTraffic {
 public:
  explicit MoeTraffic(const ExpertPlacement& placement) { set_placement(placement); }
  // A new placement (a rebalance, a rank lost); the step's routing must be assigned again.
  void set_placement(const ExpertPlacement& placement);

  // The step's routing: routed[m] what EP member m's tokens chose. Each call is a new step (version()).
  void assign(std::span<const std::vector<hal::RoutedExpert>> routed);
  std::uint64_t version() const { return version_; }

  std::int64_t ranks() const { return ranks_; }
  // Token-expert pairs rank d computes, and how many of its expert slots have one (whose weights the
  // grouped GEMM reads).
  std::int64_t expert_pairs(std::int64_t d) const { return rank_pairs_.at(static_cast<std::size_t>(d)); }
  std::int64_t slots_hit(std::int64_t d) const { return slots_hit_.at(static_cast<std::size_t>(d)); }
  // Bytes rank r sends every rank in the dispatch, bytes_per_pair per token copy.
  std::vector<std::uint64_t> dispatch_row(std::int64_t r, std::uint64_t bytes_per_pair) const;
  // Bytes rank d sends every rank in the combine: the results of the copies it computed for each.
  std::vector<std::uint64_t> combine_row(std::int64_t d, std::uint64_t bytes_per_pair) const;

 private:
  struct Slot {
    std::int32_t rank = 0;
    std::int32_t slot = 0;  // its index among the rank's slots
  };
  std::int64_t ranks_ = 0;
  std::vector<std::vector<Slot>> holders_;  // per expert: its copies
  std::vector<std::int64_t> pairs_;         // ranks x ranks, by source then destination
  std::vector<std::int64_t> rank_pairs_;
  std::vector<std::int64_t> slots_hit_;
  std::vector<std::vector<char>> hit_;  // per rank, per slot: got a pair this step
  std::vector<std::size_t> pairs_set_;  // the entries of pairs_ this step set, to clear at the next
  std::vector<Slot> slots_set_;         // the slots of hit_ this step set, likewise
  std::uint64_t version_ = 0;
};

}  // namespace nvl::engine
