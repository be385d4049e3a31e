#pragma once
// One GPU as the engine sees it: its facts, health, memories, streams, events and graphs. A CUDA
// implementation and the emulated devices of fakegpu/ both implement it.
#include <memory>
#include <string>

#include "engine/hal/device_info.h"
#include "engine/hal/gpu_event.h"
#include "engine/hal/graph.h"
#include "engine/hal/graph_exec.h"
#include "engine/hal/memory.h"
#include "engine/hal/step_outcomes.h"
#include "engine/hal/stream.h"

namespace nvl::hal {

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  DeviceId id() const { return info().id; }
  virtual DeviceHealth health() const = 0;

  // The GPU's HBM.
  virtual Memory& memory() = 0;
  // Pinned memory of the host this GPU is attached to (shared with the other GPUs of that host).
  virtual Memory& host_memory() = 0;
  // What the hardware decided in its steps (expert routing, MTP acceptance); lives as long as the device.
  virtual StepOutcomes& outcomes() = 0;

  // The stream lives as long as the device. sm_fraction in (0, 1], else std::invalid_argument.
  virtual Stream& create_stream(const std::string& name, double sm_fraction = 1.0) = 0;
  // A stream on `with`'s SMs (a stream of this device, else std::invalid_argument) whose kernels take
  // turns with `with`'s: a graph segment (the kernels between two collectives) or kernel of either
  // runs once the other's running one has ended, in the order they became ready; collectives and
  // copies run beside the other's kernels. That is the order SGLang's two-batch overlap gives two
  // micro-batches: one host thread issues their stages in turn on one CUDA stream while their
  // all-to-alls go on in the background (DeepEP's receive hooks). On CUDA, an event recorded at the
  // end of each stage and waited for by the other stream's next stage gives it.
  virtual Stream& create_stream_taking_turns(const std::string& name, Stream& with) = 0;
  virtual std::shared_ptr<GpuEvent> create_event(const std::string& name) = 0;
  // Prices and checks the graph once for this device; throws HalError for work the device cannot do.
  virtual std::shared_ptr<GraphExec> instantiate(const Graph& graph) = 0;
  // As cudaGraphExecUpdate: later launches of `exec` run `graph`, launches already queued run what
  // they were launched with; true when done. False when the device cannot update it in place (a CUDA
  // device cannot when the topology changed): `exec` is as it was and `graph` needs instantiating.
  // Throws as instantiate does, leaving `exec` as it was; an exec of another device is
  // std::invalid_argument.
  virtual bool update(GraphExec& exec, const Graph& graph) = 0;

  // Returns a device that needs a reset to healthy; whatever was queued has already failed. Allocations
  // survive (contents are not modelled). A lost device throws HalError (Xid 79).
  virtual void reset() = 0;
};

// `exec` made to run `graph`: updated in place where the device can, otherwise (or while null)
// instantiated anew. For a graph built afresh every step, as a step's graph is: returns `exec`.
const std::shared_ptr<GraphExec>& refresh(Device& device, std::shared_ptr<GraphExec>& exec, const Graph& graph);

}  // namespace nvl::hal
