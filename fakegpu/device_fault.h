#pragma once
// A fault a device reports to whoever listens (the fabric for NVLink errors and lost GPUs, the
// harness for the timeline).
#include <functional>

#include "engine/hal/types.h"

namespace nvl::fakegpu {

struct DeviceFault {
  hal::DeviceId device = -1;
  hal::Xid xid = hal::Xid::none;
  int link = -1;  // Xid 74: the NVLink port; otherwise -1
};

using FaultListener = std::function<void(const DeviceFault& fault)>;

}  // namespace nvl::fakegpu
