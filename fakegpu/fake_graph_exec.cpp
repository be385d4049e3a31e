#include "fakegpu/fake_graph_exec.h"

#include <utility>

namespace nvl::fakegpu {

FakeGraphExec::FakeGraphExec(const hal::Graph& graph, const CostModel& model, const DeviceProfile& profile,
                             hal::DeviceId device, bool fast_forward, bool keep_kernel_names)
    : model_(model),
      profile_(profile),
      device_(device),
      fast_forward_(fast_forward),
      keep_kernel_names_(keep_kernel_names),
      lists_(model, profile.graph_node),
      layout_(std::make_shared<GraphLayout>()) {
  assign(*layout_, graph);
}

void FakeGraphExec::update(const hal::Graph& graph) {
  if (!spare_ || spare_.use_count() > 1) spare_ = std::make_shared<GraphLayout>();
  assign(*spare_, graph);
  // The current layout becomes the spare; the only other holders are launches of it.
  std::swap(layout_, spare_);
}

void FakeGraphExec::assign(GraphLayout& layout, const hal::Graph& graph) {
  lists_.start_graph();
  layout.assign(graph, model_, profile_, device_, lists_, fast_forward_, keep_kernel_names_);
  lists_.finish_graph();
}

}  // namespace nvl::fakegpu
