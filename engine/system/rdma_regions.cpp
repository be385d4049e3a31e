#include "engine/system/rdma_regions.h"

namespace nvl::engine {

hal::MemoryRegion RdmaRegions::of(hal::DeviceId device, bool grace) {
  const auto key = std::pair(device, grace);
  const auto it = regions_.find(key);
  if (it != regions_.end()) return it->second;
  const hal::MemoryRegion r = grace ? rdma_->register_host_memory(devices_.at(device)->info().host, region_bytes_)
                                    : rdma_->register_device_memory(device, region_bytes_);
  return regions_.emplace(key, r).first->second;
}

}  // namespace nvl::engine
