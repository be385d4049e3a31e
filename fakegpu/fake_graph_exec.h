#pragma once
// A graph instantiated for one emulated device: its kernels priced once and cut into segments at
// each collective. A launch then costs one event per segment (plus the collectives), not one per
// kernel: segment i runs its kernels as one compute job, then hands collective i to its group and
// waits for it (so the slowest member holds back the whole group, as on hardware).
#include <optional>
#include <string>
#include <vector>

#include "engine/hal/graph.h"
#include "engine/hal/graph_exec.h"
#include "fakegpu/compute_engine.h"
#include "fakegpu/cost_model.h"

namespace nvl::fakegpu {

class FakeGraphExec final : public hal::GraphExec {
 public:
  struct Segment {
    std::vector<KernelCost> kernels;                // the first segment starts with the graph-launch overhead
    std::optional<hal::CollectiveCall> collective;  // run after the kernels
    mutable PriceCache cache;
  };

  // Throws HalError for a dtype the device lacks; std::invalid_argument for a collective whose
  // group does not hold this device at the given rank.
  FakeGraphExec(const hal::Graph& graph, const CostModel& model, const DeviceProfile& profile, hal::DeviceId device);

  const std::string& name() const override { return name_; }
  hal::DeviceId device() const override { return device_; }
  const std::vector<Segment>& segments() const { return segments_; }
  // Alone on the device at nominal clock, collectives excluded.
  rt::Duration compute_time() const;

 private:
  std::string name_;
  hal::DeviceId device_;
  std::vector<Segment> segments_;
};

}  // namespace nvl::fakegpu
