#pragma once
// What each GPU of a deployment serves, for labels on timelines and traces: its pool, the pool's
// instance, and for a decoding pool its DP rank as the router numbers ranks (over every decoding pool).
#include <cstdint>
#include <string>
#include <vector>

#include "emu/scenario/scenario.h"

namespace nvl::emu {

struct GpuRole {
  std::string pool;           // empty: the GPU serves no pool
  std::int64_t instance = -1;
  std::int64_t dp_rank = -1;  // -1: a prefill pool's GPU
};

std::vector<GpuRole> gpu_roles(const ScenarioDeployment& layout, int gpus);

// The pool of each DP rank as the serving system numbers them (over every decoding pool), and of each
// prefill instance, in the system's order.
struct PoolMembership {
  std::vector<std::string> rank_pool;
  std::vector<std::string> prefill_pool;
};
PoolMembership pool_membership(const ScenarioDeployment& layout);

// "gpuN" and its role: "gpu3 decode rank 3", "gpu64 prefill 0".
std::string gpu_name(int gpu, const GpuRole& role);

}  // namespace nvl::emu
