#pragma once
// Device copies priced on the fabric: a peer copy is a flow over NVLink, a copy to or from pinned host
// memory a flow over the GPU's C2C (GB-class) or PCIe link, so KV spills to Grace, loads back and peer
// copies share links with everything else the fabric carries. Copies within one GPU stay on its HBM.
#include <string>

#include "fabric/fabric.h"
#include "fakegpu/gpu_fleet.h"
#include "fakegpu/transfer_path.h"

namespace nvl::emu {

class FabricTransferPath final : public fakegpu::TransferPath {
 public:
  FabricTransferPath(fabric::Fabric& fabric, const fakegpu::DeviceProfile& device)
      : fabric_(fabric), hbm_bytes_per_s_(device.hbm_bytes_per_s) {}

  void transfer(const fakegpu::TransferRequest& r, fakegpu::TransferDone done) override {
    const auto endpoint = [](const hal::MemoryLocation& m) {
      return m.kind == hal::MemoryKind::device ? fabric::Endpoint::gpu(m.id) : fabric::Endpoint::host(m.id);
    };
    if (r.src.kind == hal::MemoryKind::device && r.src == r.dst) {
      // Read and write on the same HBM.
      fabric_.runtime().call_after(rt::from_seconds(2.0 * static_cast<double>(r.bytes) / hbm_bytes_per_s_),
                                   [done = std::move(done)] { done(nullptr); });
      return;
    }
    // A copy engine moves data as a one-sided transfer does: the profile's efficiency and overhead;
    // over C2C (a GPU and its own Grace), the share of the link nvbandwidth measures each way.
    const fabric::NodeProfile& p = fabric_.profile();
    double efficiency = p.rdma_efficiency;
    if (p.has_c2c && r.src.kind != r.dst.kind) {
      efficiency = r.dst.kind == hal::MemoryKind::device ? p.c2c_host_to_device_efficiency : p.c2c_device_to_host_efficiency;
    }
    fabric_.transfer(endpoint(r.src), endpoint(r.dst), r.bytes, hal::RdmaPath::automatic, efficiency, p.rdma_overhead,
                     "copy by device " + std::to_string(r.initiator), std::move(done));
  }

 private:
  fabric::Fabric& fabric_;
  double hbm_bytes_per_s_;
};

}  // namespace nvl::emu
