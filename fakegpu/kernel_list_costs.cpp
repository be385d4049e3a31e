#include "fakegpu/kernel_list_costs.h"

namespace nvl::fakegpu {

std::span<const KernelCost> KernelListCosts::costs(const hal::SharedKernels& kernels) {
  Entry* free = nullptr;
  for (Entry& e : entries_) {
    if (e.kernels == kernels) {
      e.graph = graph_;
      return e.costs;
    }
    if (!e.kernels && free == nullptr) free = &e;
  }
  Entry& e = free != nullptr ? *free : entries_.emplace_back();
  e.costs.clear();
  model_.cost_list(*kernels, overhead_, e.costs);
  e.kernels = kernels;  // only once priced: a kernel the device cannot run throws half way
  e.graph = graph_;
  return e.costs;
}

void KernelListCosts::finish_graph() {
  for (Entry& e : entries_) {
    if (e.graph != graph_) e.kernels = nullptr;
  }
}

}  // namespace nvl::fakegpu
