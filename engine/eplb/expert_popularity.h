#pragma once
// Expert popularity that drifts over a run. The model: popularity is Zipf over a popularity order of
// the experts (the expert at position i gets weight 1 / (i+1)^skew, normalised), the order drawn at
// random from a seeded stream. A drift event picks `fraction` of the positions at random and rotates
// their experts one step along that random selection, so every picked expert takes another picked
// expert's popularity and the rest keep theirs. A placement made for the old order then grows stale.
#include <cstdint>
#include <vector>

#include "emu/rt/rng.h"
#include "engine/eplb/expert_placement.h"

namespace nvl::engine {

class ExpertPopularity {
 public:
  // Draws the order from `rng` exactly as skewed_expert_load does, so both give the same load.
  ExpertPopularity(std::int64_t experts, double skew, rt::Rng& rng);

  // One drift event; fraction in [0, 1] (std::invalid_argument otherwise). Fewer than two picked
  // positions change nothing.
  void drift(double fraction, rt::Rng& rng);
  const ExpertLoad& load() const { return load_; }

 private:
  void update_load();

  double skew_;
  std::vector<std::int64_t> order_;  // popularity position -> expert
  ExpertLoad load_;
};

}  // namespace nvl::engine
