#include "engine/hal/device_info.h"

namespace nvl::hal {

std::string_view to_string(DeviceHealth h) {
  switch (h) {
    case DeviceHealth::healthy: return "healthy";
    case DeviceHealth::needs_reset: return "needs_reset";
    case DeviceHealth::lost: return "lost";
  }
  return "unknown";
}

}  // namespace nvl::hal
