#pragma once
// A graph instantiated for one emulated device: its kernels priced once and cut into segments at
// each collective. A launch then costs one event per segment (plus the collectives), not one per
// kernel: segment i runs its kernels as one compute job, then hands collective i to its group and
// waits for it (so the slowest member holds back the whole group, as on hardware).
// A repeated body with collectives (the identical layers of a model) runs its first two iterations
// exactly and the rest as one wait of (times - 2) periods, the period being the second iteration's
// length: after its first collective every member is aligned, so the second iteration is what each
// later one takes. This keeps a 75-layer MoE step at a handful of events per rank.
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
    bool period_start = false;        // the stream notes when this segment's collective completes
    std::size_t tail_iterations = 0;  // after this segment's collective: wait this many periods
    std::size_t period_from = 0;      // the segment whose completion started the period
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
  void append(const hal::GraphNode& node, const CostModel& model, const DeviceProfile& profile);
  void append_repeat(const hal::RepeatNode& repeat, const CostModel& model, const DeviceProfile& profile);

  std::vector<Segment> segments_;
};

}  // namespace nvl::fakegpu
