#include "engine/hal/graph.h"

#include <stdexcept>

namespace nvl::hal {

Graph& Graph::add(const KernelDesc& kernel) {
  nodes_.emplace_back(kernel);
  ++kernels_;
  return *this;
}

Graph& Graph::add(KernelDesc&& kernel) {
  nodes_.emplace_back(std::move(kernel));
  ++kernels_;
  return *this;
}

Graph& Graph::add(SharedKernels kernels) {
  if (!kernels) throw std::invalid_argument("graph '" + name_ + "': null kernel list");
  kernels_ += kernels->size();
  nodes_.emplace_back(KernelsNode{std::move(kernels)});
  return *this;
}

void Graph::check(const CollectiveCall& call) const {
  if (!call.op) throw std::invalid_argument("graph '" + name_ + "': collective without an op");
  if (!call.group) throw std::invalid_argument("graph '" + name_ + "': collective '" + call.op->name + "' has no group");
  const auto members = static_cast<int>(call.group->members().size());
  if (call.rank < 0 || call.rank >= members) {
    throw std::invalid_argument("graph '" + name_ + "': collective '" + call.op->name + "': rank " +
                                std::to_string(call.rank) + " is outside group '" + call.group->name() + "' of " +
                                std::to_string(members) + " members");
  }
  if (!(call.beside_sm_fraction > 0 && call.beside_sm_fraction <= 1)) {
    throw std::invalid_argument("graph '" + name_ + "': collective '" + call.op->name + "': the kernels beside it get " +
                                std::to_string(call.beside_sm_fraction) + " of the SMs, not a share in (0, 1]");
  }
}

Graph& Graph::add(const CollectiveCall& call) {
  check(call);
  if (call.beside) kernels_ += call.beside->size();
  nodes_.emplace_back(call);
  ++collectives_;
  return *this;
}

Graph& Graph::add(CollectiveCall&& call) {
  check(call);
  if (call.beside) kernels_ += call.beside->size();
  nodes_.emplace_back(std::move(call));
  ++collectives_;
  return *this;
}

Graph& Graph::add_repeat(Graph body, std::size_t times) {
  return add_repeat(std::make_shared<const Graph>(std::move(body)), times);
}

Graph& Graph::add_repeat(std::shared_ptr<const Graph> body, std::size_t times) {
  if (!body) throw std::invalid_argument("graph '" + name_ + "': repeat of a null body");
  if (times == 0) throw std::invalid_argument("graph '" + name_ + "': repeat of '" + body->name() + "' zero times");
  for (const GraphNode& n : body->nodes()) {
    if (std::holds_alternative<RepeatNode>(n)) {
      throw std::invalid_argument("graph '" + name_ + "': repeated body '" + body->name() + "' holds a repeat itself");
    }
  }
  kernels_ += body->kernels_ * times;
  collectives_ += body->collectives_ * times;
  nodes_.emplace_back(RepeatNode{std::move(body), times});
  return *this;
}

void Graph::clear() {
  nodes_.clear();
  label_ = StepLabel{};
  kernels_ = 0;
  collectives_ = 0;
}

}  // namespace nvl::hal
