#pragma once
// The weight traffic of a rebalance: going from one placement to the next, every slot whose expert
// changes loads that expert's weights from a rank that held it before (over NVLink, rank to rank).
#include <cstdint>
#include <vector>

#include "engine/eplb/expert_placement.h"

namespace nvl::engine {

// bytes[src][dst]: weight bytes rank src sends rank dst (zero on the diagonal). Each new slot takes
// its expert from the old holder that has sent least so far, spreading the load over the copies.
// Both placements must be of the same EP group (std::invalid_argument otherwise).
std::vector<std::vector<std::uint64_t>> expert_move_bytes(const ExpertPlacement& from, const ExpertPlacement& to,
                                                         std::uint64_t bytes_per_expert);

}  // namespace nvl::engine
