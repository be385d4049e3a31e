#pragma once
// A graph instantiated for one emulated device: what its launches run is a GraphLayout (kernels
// priced once, segments cut at the collectives). Updating the exec to a new graph (as
// cudaGraphExecUpdate does) lays the new graph out in the storage of the layout before the current
// one, so a step graph rebuilt every step costs no allocation, and prices again only the shared
// kernel lists the last graph did not hold; launches already queued keep the layout they were
// launched with.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/hal/graph.h"
#include "engine/hal/graph_exec.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/graph_layout.h"
#include "fakegpu/kernel_list_costs.h"

namespace nvl::fakegpu {

class FakeGraphExec final : public hal::GraphExec {
 public:
  using Segment = GraphLayout::Segment;

  // Throws as GraphLayout::assign does. The model and profile must outlive the exec's updates.
  // fast_forward, keep_kernel_names: as GraphLayout::assign.
  FakeGraphExec(const hal::Graph& graph, const CostModel& model, const DeviceProfile& profile, hal::DeviceId device,
                bool fast_forward = true, bool keep_kernel_names = false);

  // Later launches run `graph`; throws as the constructor does, leaving the exec as it was.
  void update(const hal::Graph& graph);

  const std::string& name() const override { return layout_->name(); }
  hal::DeviceId device() const override { return device_; }
  // What a launch now runs; a launch keeps it while it runs, whatever updates come meanwhile.
  std::shared_ptr<const GraphLayout> layout() const { return layout_; }
  const std::vector<Segment>& segments() const { return layout_->segments(); }
  std::span<const KernelCost> kernels(const Segment& s) const { return layout_->kernels(s); }
  // Alone on the device at nominal clock, collectives excluded.
  rt::Duration compute_time() const { return layout_->compute_time(); }

 private:
  // Lays `graph` out in `layout`, pricing with the exec's model.
  void assign(GraphLayout& layout, const hal::Graph& graph);

  const CostModel& model_;
  const DeviceProfile& profile_;
  hal::DeviceId device_;
  bool fast_forward_;
  bool keep_kernel_names_;
  KernelListCosts lists_;
  std::shared_ptr<GraphLayout> layout_;
  std::shared_ptr<GraphLayout> spare_;  // the layout before, reused unless a queued launch still holds it
};

}  // namespace nvl::fakegpu
