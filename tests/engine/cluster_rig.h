#pragma once
// A small emulated cluster for engine tests: a virtual runtime, a fleet of fake GPUs and the fabric
// that joins them (what the harness assembles for a scenario).
#include <memory>
#include <string>
#include <vector>

#include "emu/rt/virtual_runtime.h"
#include "fabric/fabric.h"
#include "fabric/fabric_collectives.h"
#include "fabric/profile_loader.h"
#include "fakegpu/gpu_fleet.h"

namespace nvl::engine::testing {

struct ClusterRig {
  ClusterRig(const std::string& gpu_profile, const std::string& fabric_profile, int gpus, int units = 1)
      : fleet(fakegpu::GpuFleet::load(rt, gpu_profile, gpus)),
        fabric(rt, fabric::make_cluster(fabric_profile, units), fabric::FabricOptions{rt::Duration()}),
        collectives(fabric) {}

  std::vector<hal::Device*> devices(int first, int count) {
    std::vector<hal::Device*> out;
    for (int i = first; i < first + count; ++i) out.push_back(&fleet->device(i));
    return out;
  }

  rt::VirtualRuntime rt;
  std::unique_ptr<fakegpu::GpuFleet> fleet;
  fabric::Fabric fabric;
  fabric::FabricCollectives collectives;
};

}  // namespace nvl::engine::testing
