#pragma once
// deployment.pools: reading each pool's keys (its role's defaults for the scheduler keys) and placing
// the pools on the cluster's GPUs. Placement: pools with an explicit GPU list first, then pools placed in
// a rack, then "auto" pools, each taking the lowest free GPU indices (so packed tray by tray, rack by
// rack, in pool order); instance i of a pool takes the i-th run of tp x dp x pp of its GPUs.
#include <cstdint>
#include <string>
#include <vector>

#include "emu/rt/json_reader.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {

// Reads deployment.pools (an rt::InputError naming deployment.pools[i].key for each problem).
std::vector<ScenarioPool> read_pools(rt::JsonReader& deployment);

// Fills each pool's instance_gpus from its placement on a cluster of `units` units of `gpus_per_unit`
// GPUs; overlapping GPUs, GPUs outside the cluster and a cluster too small are rt::InputErrors.
void place_pools(std::vector<ScenarioPool>& pools, std::int64_t gpus_per_unit, std::int64_t units,
                 const std::string& file, const std::string& fabric_profile);

}  // namespace nvl::emu
