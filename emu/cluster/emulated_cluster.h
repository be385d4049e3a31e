#pragma once
// The fake hardware of one run, assembled: a runtime's fleet of emulated GPUs and the fabric that
// joins them, with the collectives the engine's worker groups communicate through; the GPUs' copies
// (peer, to and from Grace) run as fabric flows. GPU i of the
// fleet is GPU i of the fabric (rack-major). The harness builds one per scenario; tests and
// calibration rows build small ones.
#include <memory>
#include <string>
#include <vector>

#include "emu/cluster/fabric_mode.h"
#include "emu/cluster/fabric_transfer_path.h"
#include "emu/rt/runtime.h"
#include "fabric/fabric.h"
#include "fabric/fabric_collectives.h"
#include "fabric/profile_loader.h"
#include "fakegpu/gpu_fleet.h"

namespace nvl::emu {

class EmulatedCluster {
 public:
  // `units` racks or nodes of `fabric_profile`; the fleet holds `gpus` of `gpu_profile` (at most the fabric's).
  EmulatedCluster(rt::Runtime& rt, const std::string& gpu_profile, const std::string& fabric_profile, int gpus,
                  int units = 1, FabricMode mode = FabricMode::fast)
      : fleet_(fakegpu::GpuFleet::load(rt, gpu_profile, gpus)),
        fabric_(rt, fabric::make_cluster(fabric_profile, units), fabric::FabricOptions{rt::Duration()}),
        collectives_(fabric_, fabric::CollectivesOptions{mode == FabricMode::fast}),
        copies_(fabric_, fleet_->profile()) {
    fleet_->set_transfer_path(copies_);
    fleet_->set_fast_forward(mode == FabricMode::fast);
    // A GPU lost or needing a reset aborts its communicators, so that the other members' collectives
    // fail with its error instead of waiting for it forever.
    for (int i = 0; i < fleet_->size(); ++i) {
      fleet_->device(i).add_fault_listener([this](const fakegpu::DeviceFault& f) {
        if (f.xid == hal::Xid::gpu_lost || f.xid == hal::Xid::ecc_uncorrectable) collectives_.device_failed(f.device, f.xid);
      });
    }
  }

  std::vector<hal::Device*> devices(int first, int count) {
    std::vector<hal::Device*> out;
    for (int i = first; i < first + count; ++i) out.push_back(&fleet_->device(i));
    return out;
  }
  // Kernels priced from `library`'s measured tables (GpuFleet::use_kernel_library; "roofline": none) and
  // all-reduces run as its own where the fabric profile measured them. Before anything is priced.
  void use_kernel_library(const std::string& library) {
    fleet_->use_kernel_library(library);
    fabric_.use_kernel_library(library);
  }
  fakegpu::GpuFleet& fleet() { return *fleet_; }
  fabric::Fabric& fabric() { return fabric_; }
  hal::Collectives& collectives() { return collectives_; }

 private:
  std::unique_ptr<fakegpu::GpuFleet> fleet_;
  fabric::Fabric fabric_;
  fabric::FabricCollectives collectives_;
  FabricTransferPath copies_;  // device copies as fabric flows
};

}  // namespace nvl::emu
