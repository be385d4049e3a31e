#pragma once
// Roofline pricing of kernels for one device profile:
//   t = overhead + max((flops + half_flops) / (peak(dtype) * eff_compute(kind, dtype)),
//                      (bytes + half_bytes) / (hbm_bw * eff_memory(kind)))
// which is the roofline with the saturating efficiency curve of efficiency_table.h. Rates are
// folded into ns-per-unit factors at construction so that pricing is a few multiply-adds.
#include <array>
#include <string>

#include "emu/rt/time.h"
#include "engine/hal/kernel.h"
#include "fakegpu/device_profile.h"
#include "fakegpu/kernel_cost.h"

namespace nvl::fakegpu {

class CostModel {
 public:
  CostModel(const DeviceProfile& profile, hal::DeviceId device);

  // Throws HalError when the device has no peak for the kernel's dtype (e.g. FP4 on Hopper).
  KernelCost cost(const hal::KernelDesc& k, rt::Duration overhead) const;
  // A kernel launched on its own, with the whole device at nominal clock.
  rt::Duration kernel_time(const hal::KernelDesc& k) const;

 private:
  struct ComputeRate {
    double ns_per_flop = 0;  // 0: the dtype is not supported
    double half_flops = 0;
  };
  struct MemoryRate {
    double ns_per_byte = 0;
    double half_bytes = 0;
  };

  hal::DeviceId device_;
  std::string device_name_;
  rt::Duration kernel_launch_;
  std::array<std::array<ComputeRate, hal::kDTypeCount>, hal::kKernelKindCount> compute_{};
  std::array<MemoryRate, hal::kKernelKindCount> memory_{};
};

}  // namespace nvl::fakegpu
