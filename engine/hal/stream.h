#pragma once
// An in-order queue of device work (as a CUDA stream). Enqueueing never blocks; completion is
// observed by a host callback, an event, or synchronize() from a fiber. A stream may own a fraction
// of the device's SMs (as a green context does); concurrent streams share the device's compute.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/hal/buffer.h"
#include "engine/hal/gpu_event.h"
#include "engine/hal/graph_exec.h"
#include "engine/hal/hal_error.h"
#include "engine/hal/kernel.h"

namespace nvl::hal {

// Runs on the runtime loop (not in a fiber, must not block) once the work before it is done, with
// the stream's first error since the last synchronize(), or null.
using HostCallback = std::function<void(const HalError* error)>;

class Stream {
 public:
  virtual ~Stream() = default;
  virtual const std::string& name() const = 0;
  virtual DeviceId device() const = 0;
  virtual double sm_fraction() const = 0;

  // Every enqueue throws HalError at once while the device is lost or needs a reset; work already
  // queued then fails, and the failure is reported through synchronize(), callbacks and events.
  virtual void launch(const KernelDesc& kernel) = 0;
  // The graph must have been instantiated for this stream's device (std::invalid_argument otherwise).
  virtual void launch(std::shared_ptr<const GraphExec> graph) = 0;
  // Device to device (same device or peer), device to host, host to device. Both ranges must lie
  // inside their buffers (std::out_of_range otherwise); one side must be this stream's device.
  virtual void copy(const Buffer& dst, std::uint64_t dst_offset_bytes, const Buffer& src,
                    std::uint64_t src_offset_bytes, std::uint64_t bytes) = 0;
  virtual void record(GpuEvent& event) = 0;
  // Later work on this stream waits for the event's latest record (fails if that work failed).
  virtual void wait(GpuEvent& event) = 0;
  virtual void add_callback(HostCallback fn) = 0;

  // Blocks the calling fiber (fibers only) until everything enqueued is done; then throws the first
  // error since the last synchronize(), if any, and forgets it.
  virtual void synchronize() = 0;
  // Nothing queued or running.
  virtual bool idle() const = 0;
};

}  // namespace nvl::hal
