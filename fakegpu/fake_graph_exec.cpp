#include "fakegpu/fake_graph_exec.h"

#include <cmath>
#include <stdexcept>

namespace nvl::fakegpu {

FakeGraphExec::FakeGraphExec(const hal::Graph& graph, const CostModel& model, const DeviceProfile& profile,
                             hal::DeviceId device)
    : name_(graph.name()), device_(device) {
  segments_.emplace_back();
  segments_.back().kernels.push_back(KernelCost{0, 0, static_cast<double>(profile.graph_launch.ns())});
  for (const hal::GraphNode& node : graph.nodes()) {
    if (const auto* k = std::get_if<hal::KernelDesc>(&node)) {
      segments_.back().kernels.push_back(model.cost(*k, profile.graph_node));
      continue;
    }
    const auto& call = std::get<hal::CollectiveCall>(node);
    const auto& members = call.group->members();
    if (members[static_cast<std::size_t>(call.rank)] != device) {
      throw std::invalid_argument("graph '" + name_ + "': collective '" + call.op.name + "' names rank " +
                                  std::to_string(call.rank) + " of group '" + call.group->name() + "', which is device " +
                                  std::to_string(members[static_cast<std::size_t>(call.rank)]) + ", not device " +
                                  std::to_string(device));
    }
    segments_.back().collective = call;
    segments_.emplace_back();
  }
}

rt::Duration FakeGraphExec::compute_time() const {
  double ns = 0;
  for (const Segment& s : segments_) {
    for (const KernelCost& c : s.kernels) ns += price_ns(c, RunShares{});
  }
  return rt::Duration::nanoseconds(std::llround(ns));
}

}  // namespace nvl::fakegpu
