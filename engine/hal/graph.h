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

class Graph;

// A body run `times` times in a row (the identical layers of a model). Devices may price it without
// replaying every iteration; the result must be what replaying them would give.
struct RepeatNode {
  std::shared_ptr<const Graph> body;
  std::size_t times = 1;
};

using GraphNode = std::variant<KernelDesc, CollectiveCall, RepeatNode>;

class Graph {
 public:
  explicit Graph(std::string name) : name_(std::move(name)) {}

  Graph& add(KernelDesc kernel);
  // A null group or a rank outside it throws std::invalid_argument.
  Graph& add(CollectiveCall call);
  // `body` run `times` (>= 1) times; bodies do not nest (std::invalid_argument).
  Graph& add_repeat(Graph body, std::size_t times);

  const std::string& name() const { return name_; }
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  // Counted over every iteration of repeated bodies.
  std::size_t kernel_count() const { return kernels_; }
  std::size_t collective_count() const { return collectives_; }

 private:
  std::string name_;
  std::vector<GraphNode> nodes_;
  std::size_t kernels_ = 0;
  std::size_t collectives_ = 0;
};

}  // namespace nvl::hal
