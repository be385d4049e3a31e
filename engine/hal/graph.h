#pragma once
// A step's work as one unit (as a CUDA graph is captured): kernels and collective calls in order.
// A device instantiates it once (Device::instantiate) and launches the result many times.
#include <cstddef>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine/hal/collectives.h"
#include "engine/hal/kernel.h"

namespace nvl::hal {

// A collective inside a graph: this device takes part as member `rank` of `group`.
struct CollectiveCall {
  std::shared_ptr<CommGroup> group;
  int rank = 0;
  CollectiveOp op;
};

using GraphNode = std::variant<KernelDesc, CollectiveCall>;

class Graph {
 public:
  explicit Graph(std::string name) : name_(std::move(name)) {}

  Graph& add(KernelDesc kernel);
  // A null group or a rank outside it throws std::invalid_argument.
  Graph& add(CollectiveCall call);

  const std::string& name() const { return name_; }
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  std::size_t kernel_count() const { return nodes_.size() - collectives_; }
  std::size_t collective_count() const { return collectives_; }

 private:
  std::string name_;
  std::vector<GraphNode> nodes_;
  std::size_t collectives_ = 0;
};

}  // namespace nvl::hal
