#pragma once
// Impossible deployments, caught when the scenario is read, each as an rt::InputError naming the pool's
// key to change (deployment.pools[i].key): an EP group the routed experts do not divide, a TP degree that
// does not divide the attention heads, layouts the engine does not run, roles that leave prompts with
// nowhere to go. Whether the model fits in HBM is
// decided by the engine when the deployment is built (emu/scenario/deployment.cpp names the GPU).
#include "emu/scenario/scenario.h"

namespace nvl::emu {

void check_deployment(const Scenario& scenario);

}  // namespace nvl::emu
