#pragma once
// A marker in a stream's work (as a CUDA event): record() on one stream, wait() on another stream
// of any device, or block a fiber on it. Waits see the latest record() made before them.
#include <optional>
#include <string>

#include "emu/rt/time.h"

namespace nvl::hal {

class GpuEvent {
 public:
  virtual ~GpuEvent() = default;
  virtual const std::string& name() const = 0;
  // True once the work before the latest record() is done (true when never recorded).
  virtual bool query() const = 0;
  // Blocks the calling fiber (fibers only) until query() holds; throws the HalError of that work
  // when it failed.
  virtual void synchronize() = 0;
  // When the latest record() completed; empty while pending or never recorded.
  virtual std::optional<rt::Time> completed_at() const = 0;
};

}  // namespace nvl::hal
