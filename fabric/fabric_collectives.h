#pragma once
// hal::Collectives on the emulated fabric: creates communicators over GPUs of one Fabric.
#include <memory>

#include "engine/hal/collectives.h"
#include "fabric/collective_pricer.h"
#include "fabric/comm_group.h"

namespace nvl::fabric {

struct CollectivesOptions {
  // Price collectives on idle, healthy links analytically (cached); off: every call runs as live flows.
  bool fast_path = true;
};

class FabricCollectives final : public hal::Collectives {
 public:
  explicit FabricCollectives(Fabric& fabric, CollectivesOptions opts = {}) : fabric_(fabric), opts_(opts) {}
  std::shared_ptr<hal::CommGroup> create_group(std::string name, std::vector<hal::DeviceId> members) override {
    return std::make_shared<FabricCommGroup>(fabric_, pricer_, std::move(name), std::move(members), opts_.fast_path);
  }

 private:
  Fabric& fabric_;
  CollectivesOptions opts_;
  CollectivePricer pricer_;
};

}  // namespace nvl::fabric
