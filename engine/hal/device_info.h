#pragma once
// The facts of one GPU the engine may plan with (capacity, peak rates), and its health.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/hal/types.h"

namespace nvl::hal {

enum class DeviceHealth : std::uint8_t {
  healthy,
  needs_reset,  // after an uncorrectable ECC error (Xid 48): work fails until reset()
  lost,         // fallen off the bus (Xid 79): work fails for good
};
std::string_view to_string(DeviceHealth h);

inline constexpr int kDTypeCount = 6;

struct DeviceInfo {
  DeviceId id = -1;
  std::string name;  // the device model, e.g. "B300"
  HostId host = -1;  // the host whose pinned memory this GPU reaches
  std::uint64_t hbm_bytes = 0;  // what allocations may use
  double hbm_bytes_per_s = 0;
  int sm_count = 0;
  // Dense peak per dtype, indexed by DType; 0 where the device has no such tensor-core path.
  std::array<double, kDTypeCount> peak_flops_per_s{};

  double peak(DType d) const { return peak_flops_per_s[static_cast<std::size_t>(d)]; }
  bool has_peak(DType d) const { return peak(d) > 0; }
};

}  // namespace nvl::hal
