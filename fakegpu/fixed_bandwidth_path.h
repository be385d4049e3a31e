#pragma once
// The transfer path used when no fabric is attached: each copy runs alone at a fixed rate from the
// profiles, without sharing links with other copies.
//   same device: read and write HBM, 2 * bytes / HBM bandwidth;
//   peer:        bytes / the lower default peer (NVLink) rate of the two devices;
//   with a host: bytes / min(host link rate (NVLink-C2C or PCIe), host memory bandwidth).
#include <vector>

#include "emu/rt/runtime.h"
#include "fakegpu/device_profile.h"
#include "fakegpu/host_profile.h"
#include "fakegpu/transfer_path.h"

namespace nvl::fakegpu {

class FixedBandwidthPath final : public TransferPath {
 public:
  explicit FixedBandwidthPath(rt::Runtime& rt) : rt_(rt) {}

  void add_device(hal::DeviceId id, const DeviceProfile& device, const HostProfile& host);
  // Throws std::invalid_argument for a device it does not know or a host-to-host request.
  rt::Duration duration(const TransferRequest& request) const;
  void transfer(const TransferRequest& request, TransferDone done) override;

 private:
  struct Rates {
    double hbm_bytes_per_s = 0;
    double peer_bytes_per_s = 0;
    double host_bytes_per_s = 0;
  };
  const Rates& rates(hal::DeviceId id) const;

  rt::Runtime& rt_;
  std::vector<Rates> devices_;  // by DeviceId; 0 rates: unknown
};

}  // namespace nvl::fakegpu
