#pragma once
// How a device's copies are priced: the device hands each copy (peer, device to host, host to
// device) to a transfer path. The default is FixedBandwidthPath; the fabric plugs in its own to
// price copies as flows that share links.
#include <cstdint>
#include <functional>

#include "engine/hal/hal_error.h"
#include "engine/hal/memory.h"

namespace nvl::fakegpu {

struct TransferRequest {
  hal::MemoryLocation src;
  hal::MemoryLocation dst;
  std::uint64_t bytes = 0;
  hal::DeviceId initiator = -1;  // the device whose stream issued the copy
};

// Runs on the loop when the last byte has arrived: null, or why the transfer failed.
using TransferDone = std::function<void(const hal::HalError* error)>;

class TransferPath {
 public:
  virtual ~TransferPath() = default;
  virtual void transfer(const TransferRequest& request, TransferDone done) = 0;
};

}  // namespace nvl::fakegpu
