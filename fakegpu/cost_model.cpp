#include "fakegpu/cost_model.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "engine/hal/hal_error.h"

namespace nvl::fakegpu {

CostModel::CostModel(const DeviceProfile& profile, hal::DeviceId device)
    : device_(device),
      peak_flops_per_s_(profile.peak_flops_per_s),
      hbm_bytes_per_s_(profile.hbm_bytes_per_s),
      device_name_(profile.name),
      kernel_launch_(profile.kernel_launch) {
  for (int k = 0; k < hal::kKernelKindCount; ++k) {
    const KindEfficiency& eff = profile.efficiency.of(static_cast<hal::KernelKind>(k));
    for (int d = 0; d < hal::kDTypeCount; ++d) {
      const double peak = profile.peak_flops_per_s[static_cast<std::size_t>(d)];
      if (peak <= 0) continue;
      compute_[k][d] = {1e9 / (peak * eff.compute_efficiency[static_cast<std::size_t>(d)]), eff.compute_half_flops};
    }
    memory_[k] = {1e9 / (profile.hbm_bytes_per_s * eff.memory_efficiency), eff.memory_half_bytes};
  }
}

KernelCost CostModel::cost(const hal::KernelDesc& k, rt::Duration overhead) const {
  const auto kind = static_cast<std::size_t>(k.kind);
  const ComputeRate& c = compute_[kind][static_cast<std::size_t>(k.dtype)];
  if (c.ns_per_flop <= 0) {
    throw hal::HalError(device_, "launch '" + k.name + "'", hal::Xid::none,
                        std::string(device_name_) + " has no " + std::string(hal::to_string(k.dtype)) +
                            " peak in its profile");
  }
  const MemoryRate& m = memory_[kind];
  KernelCost out;
  // An empty side costs nothing, rather than the curve's fill time.
  out.compute_ns = k.flops > 0 ? (static_cast<double>(k.flops) + c.half_flops) * c.ns_per_flop : 0.0;
  out.memory_ns = k.bytes > 0 ? (static_cast<double>(k.bytes) + m.half_bytes) * m.ns_per_byte : 0.0;
  out.overhead_ns = static_cast<double>(overhead.ns());
  if (gemm_ && k.kind == hal::KernelKind::gemm && gemm_->has(k.dtype)) {
    if (const auto* g = std::get_if<hal::GemmShape>(&k.shape)) {
      const auto roofline_of = [&](std::int64_t rows, std::int64_t cols, std::int64_t depth) {
        return gemm_roofline_ns(k.dtype, rows, cols, depth);
      };
      const auto measured = gemm_->time_ns(k.dtype, g->m, g->n, g->k, roofline_of);
      const double roofline = std::max(out.compute_ns, out.memory_ns);
      if (measured && roofline > 0) {
        const double scale = *measured / roofline;
        out.compute_ns *= scale;
        out.memory_ns *= scale;
        out.measured = true;
      }
    }
  }
  return out;
}

double CostModel::gemm_roofline_ns(hal::DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) const {
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double bytes = static_cast<double>(n) * static_cast<double>(k) * hal::bits_of(dtype) / 8 +
                       2.0 * static_cast<double>(m) * static_cast<double>(n + k);  // BF16 activations in and out
  return 1e9 * std::max(flops / peak_flops_per_s_[static_cast<std::size_t>(dtype)], bytes / hbm_bytes_per_s_);
}

rt::Duration CostModel::kernel_time(const hal::KernelDesc& k) const {
  return rt::Duration::nanoseconds(std::llround(price_ns(cost(k, kernel_launch_), RunShares{})));
}

}  // namespace nvl::fakegpu
