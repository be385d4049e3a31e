#include "fakegpu/fixed_bandwidth_path.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace nvl::fakegpu {

void FixedBandwidthPath::add_device(hal::DeviceId id, const DeviceProfile& device, const HostProfile& host) {
  if (id < 0) throw std::invalid_argument("device id " + std::to_string(id) + " is negative");
  if (devices_.size() <= static_cast<std::size_t>(id)) devices_.resize(static_cast<std::size_t>(id) + 1);
  devices_[static_cast<std::size_t>(id)] = Rates{device.hbm_bytes_per_s, device.default_peer_bytes_per_s,
                                                 std::min(device.host_link_bytes_per_s, host.memory_bytes_per_s)};
}

const FixedBandwidthPath::Rates& FixedBandwidthPath::rates(hal::DeviceId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= devices_.size() || devices_[static_cast<std::size_t>(id)].hbm_bytes_per_s <= 0) {
    throw std::invalid_argument("transfer path: device " + std::to_string(id) + " was never added");
  }
  return devices_[static_cast<std::size_t>(id)];
}

rt::Duration FixedBandwidthPath::duration(const TransferRequest& r) const {
  const bool src_dev = r.src.kind == hal::MemoryKind::device;
  const bool dst_dev = r.dst.kind == hal::MemoryKind::device;
  const double bytes = static_cast<double>(r.bytes);
  double seconds = 0;
  if (src_dev && dst_dev && r.src.id == r.dst.id) {
    seconds = 2.0 * bytes / rates(r.src.id).hbm_bytes_per_s;
  } else if (src_dev && dst_dev) {
    seconds = bytes / std::min(rates(r.src.id).peer_bytes_per_s, rates(r.dst.id).peer_bytes_per_s);
  } else if (src_dev || dst_dev) {
    seconds = bytes / rates(src_dev ? r.src.id : r.dst.id).host_bytes_per_s;
  } else {
    throw std::invalid_argument("transfer path: host-to-host copies are not device work");
  }
  return rt::from_seconds(seconds);
}

void FixedBandwidthPath::transfer(const TransferRequest& request, TransferDone done) {
  rt_.call_after(duration(request), [done = std::move(done)] { done(nullptr); });
}

}  // namespace nvl::fakegpu
