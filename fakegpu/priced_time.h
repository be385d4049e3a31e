#pragma once
// Kernel time launched on a device, as priced alone at nominal clock, per kernel kind (and the graph
// launches' own overhead), with the part of each priced from measured tables (the rest from the roofline).
#include <array>
#include <cstddef>

#include "engine/hal/kernel.h"
#include "fakegpu/kernel_cost.h"

namespace nvl::fakegpu {

class PricedTime {
 public:
  struct Part {
    double ns = 0;
    double measured_ns = 0;
  };
  // Parts by hal::KernelKind, then the graph launches' overhead.
  static constexpr std::size_t kGraphLaunch = hal::kKernelKindCount;
  static constexpr std::size_t kParts = kGraphLaunch + 1;

  // A kernel of cost `c` that took `ns`: one add, as graph layouts count every kernel of every step.
  void add(const KernelCost& c, double ns) {
    const std::size_t part = c.kind ? static_cast<std::size_t>(*c.kind) : kGraphLaunch;
    ns_[2 * part + (c.measured ? 1 : 0)] += ns;
  }
  // `other` run `times` times.
  void add(const PricedTime& other, double times = 1) {
    for (std::size_t i = 0; i < ns_.size(); ++i) ns_[i] += times * other.ns_[i];
  }
  Part part(std::size_t i) const { return {ns_[2 * i] + ns_[2 * i + 1], ns_[2 * i + 1]}; }

 private:
  std::array<double, 2 * kParts> ns_{};  // per part: from the roofline, then from measured tables
};

}  // namespace nvl::fakegpu
