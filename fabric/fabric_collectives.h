#pragma once
// hal::Collectives on the emulated fabric: creates communicators over GPUs of one Fabric.
#include <memory>
#include <vector>

#include "engine/hal/collectives.h"
#include "fabric/collective_pricer.h"
#include "fabric/comm_group.h"

namespace nvl::fabric {

struct CollectivesOptions {
  // Price collectives on healthy links without flows analytically (cached); off: every call runs as live flows.
  bool fast_path = true;
};

class FabricCollectives final : public hal::Collectives {
 public:
  explicit FabricCollectives(Fabric& fabric, CollectivesOptions opts = {}) : fabric_(fabric), opts_(opts) {}
  std::shared_ptr<hal::CommGroup> create_group(std::string name, std::vector<hal::DeviceId> members) override {
    auto g = std::make_shared<FabricCommGroup>(fabric_, pricer_, std::move(name), std::move(members), opts_.fast_path);
    std::erase_if(groups_, [](const std::weak_ptr<FabricCommGroup>& w) { return w.expired(); });
    groups_.push_back(g);
    return g;
  }
  // A GPU failed (Xid 79 lost, Xid 48 until reset): every communicator it belongs to aborts.
  void device_failed(hal::DeviceId device, hal::Xid cause) {
    for (const auto& w : groups_) {
      if (auto g = w.lock()) g->member_failed(device, cause);
    }
  }

 private:
  Fabric& fabric_;
  CollectivesOptions opts_;
  CollectivePricer pricer_;
  std::vector<std::weak_ptr<FabricCommGroup>> groups_;  // in creation order, for device_failed
};

}  // namespace nvl::fabric
