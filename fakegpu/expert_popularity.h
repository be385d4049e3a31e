#pragma once
// Expert popularity that drifts over a run: what share of the gate's token-expert pairs each routed
// expert draws on this workload. The model: Zipf over a popularity order of the experts (the expert at
// position i gets weight 1 / (i+1)^skew, normalised), the order drawn at random from a seeded stream. A
// drift event picks `fraction` of the positions at random and rotates their experts one step along that
// random selection, so every picked expert takes another picked expert's popularity and the rest keep
// theirs. A placement made for the old order then grows stale.
#include <cstdint>
#include <vector>

#include "emu/rt/rng.h"

namespace nvl::fakegpu {

class ExpertPopularity {
 public:
  // experts >= 1 and skew >= 0, else std::invalid_argument.
  ExpertPopularity(std::int64_t experts, double skew, rt::Rng& rng);

  // One drift event; fraction in [0, 1] (std::invalid_argument otherwise). Fewer than two picked
  // positions change nothing.
  void drift(double fraction, rt::Rng& rng);
  // Per expert, its share of the pairs (sums to 1).
  const std::vector<double>& shares() const { return shares_; }

 private:
  void update_shares();

  double skew_;
  std::vector<std::int64_t> order_;  // popularity position -> expert
  std::vector<double> shares_;
};

}  // namespace nvl::fakegpu
