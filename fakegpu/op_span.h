#pragma once
// One stream operation (kernel, graph, copy) as it ended, for timelines: the harness draws steps from
// these. Observers are told only when one is set, so an unobserved run pays one branch per operation.
#include <cstdint>
#include <functional>
#include <string_view>

#include "emu/rt/time.h"
#include "engine/hal/step_label.h"
#include "engine/hal/types.h"

namespace nvl::fakegpu {

struct OpSpan {
  hal::DeviceId device = 0;
  std::string_view stream;
  std::string_view op;
  rt::Time start;
  rt::Time end;
  bool ok = true;
  const hal::StepLabel* step = nullptr;  // a graph's label (what step it is); null for other operations
  std::uint64_t bytes = 0;               // a copy's size
};
using SpanObserver = std::function<void(const OpSpan& span)>;

}  // namespace nvl::fakegpu
