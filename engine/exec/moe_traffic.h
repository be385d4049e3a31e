#pragma once
// Expected MoE traffic of one step over an EP group: how many token-expert pairs each rank computes
// and how many bytes each rank sends each other rank in the dispatch (and back in the combine). Each
// of a token's top-k copies lands on rank d with d's share of the routed load (EPLB placement and
// expert popularity). Expected values, not samples: the step time follows the most loaded rank.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/eplb/expert_placement.h"

namespace nvl::engine {

class MoeTraffic {
 public:
  // shares[d]: fraction of routed token-expert pairs rank d serves (sums to 1).
  MoeTraffic(std::vector<double> shares, std::int64_t top_k);
  MoeTraffic(const ExpertPlacement& placement, const ExpertLoad& load, std::int64_t top_k)
      : MoeTraffic(placement.rank_shares(load), top_k) {}

  std::int64_t ranks() const { return static_cast<std::int64_t>(shares_.size()); }
  const std::vector<double>& shares() const { return shares_; }
  // Token-expert pairs rank d computes when rank r has tokens[r] tokens.
  std::int64_t expert_tokens(std::int64_t d, std::span<const std::int64_t> tokens) const;
  // Bytes rank r sends every rank in the dispatch (bytes_per_pair per token copy; none to itself).
  std::vector<std::uint64_t> dispatch_row(std::int64_t r, std::int64_t tokens_r, std::uint64_t bytes_per_pair) const;
  // Bytes rank d sends every rank in the combine: the results for that rank's token copies it computed.
  std::vector<std::uint64_t> combine_row(std::int64_t d, std::span<const std::int64_t> tokens,
                                         std::uint64_t bytes_per_pair) const;
  // combine_row(d, tokens, bytes_per_pair)[r], which depends on tokens[r] alone: a row can be brought
  // up to date where the counts changed.
  std::uint64_t combine_bytes(std::int64_t d, std::int64_t r, std::int64_t tokens_r, std::uint64_t bytes_per_pair) const;

 private:
  std::vector<double> shares_;
  std::int64_t top_k_;
};

}  // namespace nvl::engine
