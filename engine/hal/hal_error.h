#pragma once
// The error every engine/hal operation reports: which device (or link), which operation, and the
// Xid-like cause. Engine code catches it to detect and recover from faults.
#include <stdexcept>
#include <string>

#include "engine/hal/types.h"

namespace nvl::hal {

class HalError : public std::runtime_error {
 public:
  // device < 0 when the error is not tied to one GPU (a link, a NIC, a collective).
  HalError(DeviceId device, std::string op, Xid cause, const std::string& detail);

  DeviceId device() const { return device_; }
  const std::string& op() const { return op_; }
  Xid cause() const { return cause_; }

 private:
  DeviceId device_;
  std::string op_;
  Xid cause_;
};

}  // namespace nvl::hal
