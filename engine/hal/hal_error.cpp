#include "engine/hal/hal_error.h"

namespace nvl::hal {

namespace {
std::string message(DeviceId device, const std::string& op, Xid cause, const std::string& detail) {
  std::string m = device >= 0 ? "device " + std::to_string(device) + ": " : std::string();
  m += op + " failed";
  if (cause != Xid::none) m += ": " + std::string(to_string(cause));
  if (!detail.empty()) m += ": " + detail;
  return m;
}
}  // namespace

HalError::HalError(DeviceId device, std::string op, Xid cause, const std::string& detail)
    : std::runtime_error(message(device, op, cause, detail)), device_(device), op_(std::move(op)), cause_(cause) {}

}  // namespace nvl::hal
