#pragma once
// The costs of the shared kernel lists (hal::SharedKernels) of an exec's graph, remembered by
// identity from one graph to the next: a list is immutable and held here while remembered, so the
// same pointer means the same kernels and the remembered costs are exactly what pricing it again
// would give. A step graph shares its attention list between its layer bodies, and its gate, expert
// and head lists are the same step after step while the token counts are, so most lists come back
// priced.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/hal/graph.h"
#include "fakegpu/cost_model.h"

namespace nvl::fakegpu {

class KernelListCosts {
 public:
  // Kernels priced by `model` as graph nodes, with `overhead` each.
  KernelListCosts(const CostModel& model, rt::Duration overhead) : model_(model), overhead_(overhead) {}

  // A new graph is priced: what finish_graph() keeps is what it asks for from now on.
  void start_graph() { ++graph_; }
  // The kernels' costs in order, valid until the next call. Throws as CostModel::cost does.
  std::span<const KernelCost> costs(const hal::SharedKernels& kernels);
  // Forgets the lists the graph did not ask for.
  void finish_graph();

 private:
  struct Entry {
    hal::SharedKernels kernels;  // null: free
    std::vector<KernelCost> costs;
    std::uint64_t graph = 0;  // the last graph that asked for it
  };

  const CostModel& model_;
  rt::Duration overhead_;
  std::vector<Entry> entries_;
  std::uint64_t graph_ = 0;
};

}  // namespace nvl::fakegpu
