#pragma once
// One stream operation (kernel, graph, copy) as it ended, for timelines: the harness draws steps from
// these. Observers are told only when one is set, so an unobserved run pays one branch per operation.
#include <functional>
#include <string_view>

#include "emu/rt/time.h"
#include "engine/hal/types.h"

namespace nvl::fakegpu {

struct OpSpan {
  hal::DeviceId device = 0;
  std::string_view stream;
  std::string_view op;
  rt::Time start;
  rt::Time end;
  bool ok = true;
};
using SpanObserver = std::function<void(const OpSpan& span)>;

}  // namespace nvl::fakegpu
