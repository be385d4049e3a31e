#include "emu/scenario/gpu_roles.h"

namespace nvl::emu {

std::vector<GpuRole> gpu_roles(const ScenarioDeployment& layout, int gpus) {
  std::vector<GpuRole> roles(static_cast<std::size_t>(gpus));
  std::int64_t rank = 0;
  for (const ScenarioPool& p : layout.pools) {
    for (std::size_t inst = 0; inst < p.instance_gpus.size(); ++inst) {
      const auto& g = p.instance_gpus[inst];
      for (std::size_t j = 0; j < g.size(); ++j) {
        if (g[j] < 0 || g[j] >= gpus) continue;
        GpuRole& role = roles[static_cast<std::size_t>(g[j])];
        role.pool = p.name;
        role.instance = static_cast<std::int64_t>(inst);
        if (p.decodes()) role.dp_rank = rank + static_cast<std::int64_t>(j) / p.tp;
      }
      if (p.decodes()) rank += static_cast<std::int64_t>(g.size()) / p.tp;
    }
  }
  return roles;
}

PoolMembership pool_membership(const ScenarioDeployment& layout) {
  PoolMembership m;
  for (const ScenarioPool& p : layout.pools) {
    for (const auto& gpus : p.instance_gpus) {
      if (!p.decodes()) {
        m.prefill_pool.push_back(p.name);
        continue;
      }
      for (std::size_t r = 0; r < gpus.size() / static_cast<std::size_t>(p.tp); ++r) m.rank_pool.push_back(p.name);
    }
  }
  return m;
}

std::string gpu_name(int gpu, const GpuRole& role) {
  std::string name = "gpu" + std::to_string(gpu);
  if (role.pool.empty()) return name;
  name += " " + role.pool;
  name += role.dp_rank >= 0 ? " rank " + std::to_string(role.dp_rank) : " " + std::to_string(role.instance);
  return name;
}

}  // namespace nvl::emu
