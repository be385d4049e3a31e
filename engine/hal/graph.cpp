#include "engine/hal/graph.h"

#include <stdexcept>

namespace nvl::hal {

Graph& Graph::add(KernelDesc kernel) {
  nodes_.emplace_back(std::move(kernel));
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

}  // namespace nvl::hal
