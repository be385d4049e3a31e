#include "engine/hal/device.h"

namespace nvl::hal {

const std::shared_ptr<GraphExec>& refresh(Device& device, std::shared_ptr<GraphExec>& exec, const Graph& graph) {
  if (!exec || !device.update(*exec, graph)) exec = device.instantiate(graph);
  return exec;
}

}  // namespace nvl::hal
