#include "engine/hal/graph.h"

#include <stdexcept>

namespace nvl::hal {

Graph& Graph::add(KernelDesc kernel) {
  nodes_.emplace_back(std::move(kernel));
  ++kernels_;
  return *this;
}

Graph& Graph::add(CollectiveCall call) {
  if (!call.group) throw std::invalid_argument("graph '" + name_ + "': collective '" + call.op.name + "' has no group");
  const auto members = static_cast<int>(call.group->members().size());
  if (call.rank < 0 || call.rank >= members) {
    throw std::invalid_argument("graph '" + name_ + "': collective '" + call.op.name + "': rank " +
                                std::to_string(call.rank) + " is outside group '" + call.group->name() + "' of " +
                                std::to_string(members) + " members");
  }
  nodes_.emplace_back(std::move(call));
  ++collectives_;
  return *this;
}

Graph& Graph::add_repeat(Graph body, std::size_t times) {
  if (times == 0) throw std::invalid_argument("graph '" + name_ + "': repeat of '" + body.name() + "' zero times");
  for (const GraphNode& n : body.nodes()) {
    if (std::holds_alternative<RepeatNode>(n)) {
      throw std::invalid_argument("graph '" + name_ + "': repeated body '" + body.name() + "' holds a repeat itself");
    }
  }
  kernels_ += body.kernels_ * times;
  collectives_ += body.collectives_ * times;
  nodes_.emplace_back(RepeatNode{std::make_shared<const Graph>(std::move(body)), times});
  return *this;
}

}  // namespace nvl::hal
