#include "fakegpu/fake_graph_exec.h"

#include <cmath>
#include <stdexcept>

namespace nvl::fakegpu {

FakeGraphExec::FakeGraphExec(const hal::Graph& graph, const CostModel& model, const DeviceProfile& profile,
                             hal::DeviceId device)
    : name_(graph.name()), device_(device) {
  // One segment per collective appended, and the last: reserved so that building never moves them.
  std::size_t segments = 1;
  for (const hal::GraphNode& node : graph.nodes()) {
    if (std::holds_alternative<hal::CollectiveCall>(node)) ++segments;
    if (const auto* r = std::get_if<hal::RepeatNode>(&node)) {
      const std::size_t per_pass = r->body->collective_count();
      segments += per_pass * (per_pass == 0 || r->times <= 2 ? r->times : 2);
    }
  }
  segments_.reserve(segments);
  segments_.emplace_back();
  segments_.back().kernels.push_back(KernelCost{0, 0, static_cast<double>(profile.graph_launch.ns())});
  for (const hal::GraphNode& node : graph.nodes()) append(node, model, profile);
}

void FakeGraphExec::append(const hal::GraphNode& node, const CostModel& model, const DeviceProfile& profile) {
  if (const auto* k = std::get_if<hal::KernelDesc>(&node)) {
    segments_.back().kernels.push_back(model.cost(*k, profile.graph_node));
    return;
  }
  if (const auto* r = std::get_if<hal::RepeatNode>(&node)) {
    append_repeat(*r, model, profile);
    return;
  }
  const auto& call = std::get<hal::CollectiveCall>(node);
  const auto& members = call.group->members();
  if (members[static_cast<std::size_t>(call.rank)] != device_) {
    throw std::invalid_argument("graph '" + name_ + "': collective '" + call.op.name + "' names rank " +
                                std::to_string(call.rank) + " of group '" + call.group->name() + "', which is device " +
                                std::to_string(members[static_cast<std::size_t>(call.rank)]) + ", not device " +
                                std::to_string(device_));
  }
  segments_.back().collective = call;
  segments_.emplace_back();
}

void FakeGraphExec::append_repeat(const hal::RepeatNode& repeat, const CostModel& model,
                                  const DeviceProfile& profile) {
  const auto& body = repeat.body->nodes();
  if (repeat.body->collective_count() == 0 || repeat.times <= 2) {
    for (std::size_t i = 0; i < repeat.times; ++i) {
      for (const auto& node : body) append(node, model, profile);
    }
    return;
  }
  for (const auto& node : body) append(node, model, profile);
  const std::size_t first_end = segments_.size() - 2;  // the segment of iteration 1's last collective
  for (const auto& node : body) append(node, model, profile);
  const std::size_t second_end = segments_.size() - 2;
  segments_[first_end].period_start = true;
  segments_[second_end].tail_iterations = repeat.times - 2;
  segments_[second_end].period_from = first_end;
}

rt::Duration FakeGraphExec::compute_time() const {
  std::vector<double> segment_ns;
  double ns = 0;
  for (const Segment& s : segments_) {
    double here = 0;
    for (const KernelCost& c : s.kernels) here += price_ns(c, RunShares{});
    segment_ns.push_back(here);
    ns += here;
    if (s.tail_iterations > 0) {
      // The waited periods repeat the kernels of the segments after the period's start up to this one.
      double period = 0;
      for (std::size_t i = s.period_from + 1; i < segment_ns.size(); ++i) period += segment_ns[i];
      ns += static_cast<double>(s.tail_iterations) * period;
    }
  }
  return rt::Duration::nanoseconds(std::llround(ns));
}

}  // namespace nvl::fakegpu
