#pragma once
// The memory each decoding GPU (and its host's Grace memory) registers for RDMA, registered once on
// first use and shared by every process: a peer's region stands for the key the two processes
// exchange when they connect.
#include <cstdint>
#include <map>
#include <utility>

#include "engine/hal/device.h"
#include "engine/hal/rdma.h"

namespace nvl::engine {

class RdmaRegions {
 public:
  RdmaRegions(hal::Rdma* rdma, std::uint64_t region_bytes) : rdma_(rdma), region_bytes_(region_bytes) {}
  void add(hal::Device* gpu) { devices_[gpu->id()] = gpu; }
  // The region on `device`'s HBM, or on its host's Grace memory.
  hal::MemoryRegion of(hal::DeviceId device, bool grace);

 private:
  hal::Rdma* rdma_;
  std::uint64_t region_bytes_;
  std::map<hal::DeviceId, hal::Device*> devices_;
  std::map<std::pair<hal::DeviceId, bool>, hal::MemoryRegion> regions_;  // (GPU, its Grace?) -> region
};

}  // namespace nvl::engine
