#pragma once
// A scenario's deployment, assembled on a runtime: the emulated cluster (every GPU up to the highest one
// a pool uses), its RDMA and host network, the model and the P/D serving system with an instance per
// pool instance (deployment.pools).
// The batch runner and the live server build theirs the same way.
#include <memory>

#include "emu/cluster/emulated_cluster.h"
#include "emu/scenario/scenario.h"
#include "engine/model/model_profile.h"
#include "engine/system/pd_system.h"
#include "fabric/fabric_rdma.h"
#include "fabric/host_network.h"

namespace nvl::emu {

class Deployment {
 public:
  // A model that does not fit its GPUs, or a layout that does not divide it, is an rt::InputError on the
  // pool's key (deployment.pools[i]).
  Deployment(rt::Runtime& rt, const Scenario& sc, engine::TokenStream on_tokens, engine::RequestDone on_done);

  EmulatedCluster& cluster() { return cluster_; }
  fabric::HostNetwork& network() { return network_; }
  const engine::ModelProfile& model() const { return model_; }
  engine::PdSystem& system() { return *system_; }
  // The KV cache block size the engine runs with (trace blocks are re-cut to it).
  std::int64_t kv_block_tokens() const;

 private:
  EmulatedCluster cluster_;
  fabric::FabricRdma rdma_;
  fabric::HostNetwork network_;
  engine::ModelProfile model_;
  std::unique_ptr<engine::PdSystem> system_;
};

}  // namespace nvl::emu
