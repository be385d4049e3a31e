#pragma once
// hal::Rdma on the emulated fabric: regions in GPU HBM or host memory; a read or write is one flow from
// the source region's endpoint to the destination's, over NVLink/C2C or the NICs as the caller asks,
// after the profile's per-operation overhead and at its achievable RDMA bandwidth.
#include <map>

#include "engine/hal/rdma.h"
#include "fabric/fabric.h"

namespace nvl::fabric {

class FabricRdma final : public hal::Rdma {
 public:
  explicit FabricRdma(Fabric& fabric) : fabric_(fabric) {}

  hal::MemoryRegion register_device_memory(hal::DeviceId device, std::uint64_t bytes) override;
  hal::MemoryRegion register_host_memory(hal::HostId host, std::uint64_t bytes, int nic = 0) override;
  void deregister(hal::MemoryRegion region) override;
  void write(const hal::RdmaOp& op, hal::RdmaDone done) override;
  void read(const hal::RdmaOp& op, hal::RdmaDone done) override;
  rt::Runtime& runtime() override { return fabric_.runtime(); }

 private:
  struct Region {
    Endpoint at;
    std::uint64_t bytes;
  };
  const Region& region(const hal::MemoryRegion& r) const;
  void check(const hal::RdmaOp& op) const;
  void move(const Endpoint& src, const Endpoint& dst, const hal::RdmaOp& op, const char* verb, hal::RdmaDone done);

  Fabric& fabric_;
  std::map<std::uint64_t, Region> regions_;
  std::uint64_t next_id_ = 1;
};

}  // namespace nvl::fabric
