#pragma once
// A graph instantiated for one device (as cudaGraphExec_t): launched on that device's streams.
#include <string>

#include "engine/hal/types.h"

namespace nvl::hal {

class GraphExec {
 public:
  virtual ~GraphExec() = default;
  virtual const std::string& name() const = 0;
  virtual DeviceId device() const = 0;
};

}  // namespace nvl::hal
