#pragma once
// Tests of the engine set what its GPUs' step outcomes are drawn from, as the harness does for a pool:
// the engine itself never knows the popularity or the acceptance rate.
#include <memory>
#include <string>

#include "emu/cluster/emulated_cluster.h"
#include "fakegpu/outcome_model.h"

namespace nvl::engine {

inline void draw_outcomes(emu::EmulatedCluster& cluster, rt::Runtime& rt, int first, int count,
                          const fakegpu::OutcomeSettings& settings, const std::string& name = "pool") {
  const auto model = std::make_shared<fakegpu::OutcomeModel>(rt, name, settings);
  for (int g = first; g < first + count; ++g) cluster.fleet().device(g).set_outcome_model(model);
}

}  // namespace nvl::engine
