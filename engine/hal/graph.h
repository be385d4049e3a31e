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
#include "engine/hal/step_label.h"

namespace nvl::hal {

// Kernels run back to back, shared rather than copied: a layer's attention kernels go into every
// layer body, and a step's gate, expert and head kernels are the same step after step while the token
// counts are. Immutable; a device may remember what it priced for one list while the list lives.
using SharedKernels = std::shared_ptr<const std::vector<KernelDesc>>;

// A collective inside a graph: this device takes part as member `rank` of `group`. The op is shared
// (never null), not copied: a step's calls are the same step after step, and an instantiated graph
// runs each call of a repeated body more than once.
struct CollectiveCall {
  CollectiveCall(std::shared_ptr<CommGroup> in, int member, CollectiveOp part)
      : group(std::move(in)), rank(member), op(std::make_shared<const CollectiveOp>(std::move(part))) {}
  CollectiveCall(std::shared_ptr<CommGroup> in, int member, SharedCollectiveOp part)
      : group(std::move(in)), rank(member), op(std::move(part)) {}

  std::shared_ptr<CommGroup> group;
  int rank = 0;
  SharedCollectiveOp op;
  // Kernels run while the collective is in flight, on `beside_sm_fraction` of the stream's SMs (the
  // communication kernels hold the rest); the graph goes on once both are done. On CUDA: a second
  // stream joined by events, the kernels launched on fewer SMs (SGLang's single-batch overlap runs
  // the down GEMM and shared expert beside DeepEP's combine this way). Null: none.
  SharedKernels beside;
  double beside_sm_fraction = 1.0;
};

struct KernelsNode {
  SharedKernels kernels;
};

class Graph;

// A body run `times` times in a row (the identical layers of a model). Devices may price it without
// replaying every iteration; the result must be what replaying them would give.
struct RepeatNode {
  std::shared_ptr<const Graph> body;
  std::size_t times = 1;
};

using GraphNode = std::variant<KernelDesc, CollectiveCall, KernelsNode, RepeatNode>;

class Graph {
 public:
  explicit Graph(std::string name) : name_(std::move(name)) {}

  // Room for `nodes` top-level nodes, so that adding them never moves the ones already added.
  void reserve(std::size_t nodes) { nodes_.reserve(nodes); }
  Graph& add(const KernelDesc& kernel);
  Graph& add(KernelDesc&& kernel);
  // As adding each of `kernels` in order; a null list throws std::invalid_argument.
  Graph& add(SharedKernels kernels);
  // A null group or op, a rank outside the group, or a beside_sm_fraction outside (0, 1] throws
  // std::invalid_argument. Kernels beside the call count in kernel_count().
  Graph& add(const CollectiveCall& call);
  Graph& add(CollectiveCall&& call);
  // `body` run `times` (>= 1) times; bodies do not nest (std::invalid_argument).
  Graph& add_repeat(Graph body, std::size_t times);
  // As above with a body other graphs may share (not null); it must not change while they hold it.
  Graph& add_repeat(std::shared_ptr<const Graph> body, std::size_t times);
  // Empties the graph (and its label) to build it again, keeping its name and its room for nodes.
  void clear();

  const std::string& name() const { return name_; }
  // Which step this graph is, for timelines (the step builder fills in the batch, the worker the step).
  StepLabel& label() { return label_; }
  const StepLabel& label() const { return label_; }
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  // Counted over every iteration of repeated bodies.
  std::size_t kernel_count() const { return kernels_; }
  std::size_t collective_count() const { return collectives_; }

 private:
  void check(const CollectiveCall& call) const;

  std::string name_;
  StepLabel label_;
  std::vector<GraphNode> nodes_;
  std::size_t kernels_ = 0;
  std::size_t collectives_ = 0;
};

}  // namespace nvl::hal
