#pragma once
// What one launch of an instantiated graph runs on an emulated device: the graph's kernels priced
// and cut into segments at each collective. A launch costs one event per segment (plus the
// collectives), not one per kernel: segment i runs its kernels as one compute job, then hands
// collective i to its group and waits for it (so the slowest member holds back the whole group, as
// on hardware).
// A repeated body with collectives (the identical layers of a model) runs its first two iterations
// exactly and the rest as one wait of (times - 2) periods, the period being the second iteration's
// length: after its first collective every member is aligned, so the second iteration is what each
// later one takes. This keeps a 75-layer MoE step at a handful of events per rank.
#include <cmath>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/hal/graph.h"
#include "fakegpu/compute_engine.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/kernel_list_costs.h"
#include "fakegpu/priced_time.h"

namespace nvl::fakegpu {

class GraphLayout {
 public:
  struct Segment {
    std::size_t first_kernel = 0;  // [first_kernel, end_kernel) of kernels()
    std::size_t end_kernel = 0;
    std::size_t beside_end = 0;    // [end_kernel, beside_end): the kernels beside the collective
    const hal::CollectiveCall* collective = nullptr;  // run after the kernels (the layout holds it)
    mutable PriceCache cache;
    mutable PriceCache beside_cache;
    bool period_start = false;        // the stream notes when this segment's collective completes
    std::size_t tail_iterations = 0;  // after this segment's collective: wait this many periods
    std::size_t period_from = 0;      // the segment whose completion started the period
  };

  // Lays `graph` out for `device`, reusing this layout's storage; what was laid out before is gone
  // (also when this throws). Shared kernel lists are priced through `lists`. Throws HalError for a
  // dtype the device lacks; std::invalid_argument for a collective whose group does not hold this
  // device at the given rank.
  // fast_forward false runs every iteration of every repeated body (the exact reference mode).
  // keep_kernel_names: kernel_name() names each kernel (for detailed timelines; the kernel lists are
  // held while the layout is).
  void assign(const hal::Graph& graph, const CostModel& model, const DeviceProfile& profile, hal::DeviceId device,
              KernelListCosts& lists, bool fast_forward = true, bool keep_kernel_names = false);

  const std::string& name() const { return name_; }
  // How a stream names a launch of it: graph '<name>'.
  const std::string& launch_name() const { return launch_name_; }
  const hal::StepLabel& label() const { return label_; }
  // The name of the layout's kernel at `index` (as Segment::first_kernel counts): "graph launch" for
  // the first, "kernel" unless laid out keeping names.
  std::string_view kernel_name(std::size_t index) const;
  const std::vector<Segment>& segments() const { return segments_; }
  // A segment's kernels in order; the first segment's starts with the graph-launch overhead.
  std::span<const KernelCost> kernels(const Segment& s) const {
    return std::span<const KernelCost>(costs_).subspan(s.first_kernel, s.end_kernel - s.first_kernel);
  }
  // Kernels [first, end) of the layout's, as the segments count them.
  std::span<const KernelCost> kernels(std::size_t first, std::size_t end) const {
    return std::span<const KernelCost>(costs_).subspan(first, end - first);
  }
  // The kernels run beside the segment's collective (hal::CollectiveCall::beside).
  std::span<const KernelCost> beside(const Segment& s) const {
    return std::span<const KernelCost>(costs_).subspan(s.end_kernel, s.beside_end - s.end_kernel);
  }
  // Alone on the device at nominal clock, collectives excluded (the kernels beside them included); and
  // the same time by kernel kind, with how much of each is priced from measured tables.
  rt::Duration compute_time() const { return rt::Duration::nanoseconds(std::llround(compute_ns_)); }
  const PricedTime& priced() const { return priced_; }

 private:
  // What assign() prices with.
  struct Pricing {
    const CostModel& model;
    const DeviceProfile& profile;
    KernelListCosts& lists;
    bool fast_forward;
  };
  void append(const hal::GraphNode& node, const Pricing& pricing);
  void append_kernels(const hal::SharedKernels& kernels, const Pricing& pricing);
  // The call as this layout keeps it (unchanged shared parts are not reassigned).
  const hal::CollectiveCall& keep(const hal::CollectiveCall& call);
  // Ends the segment's kernels at `end_kernel` and the segment with `kept`; the costs laid out since
  // are the kernels beside it.
  void append_collective(const hal::CollectiveCall& kept, std::size_t end_kernel);
  void append_repeat(const hal::RepeatNode& repeat, const Pricing& pricing);
  // Iterations after the first of a repeated body: its kernels cost what they did in the first one
  // (priced from `first_cost` on) and its calls are the first one's (kept from `first_call` on), so
  // they are copied rather than priced or kept again.
  void append_iteration(const hal::Graph& body, std::size_t first_cost, std::size_t first_call);
  // Sets compute_ns_ and priced_ from the laid-out segments.
  void sum_compute();

  std::string name_;
  std::string launch_name_;
  hal::StepLabel label_;
  hal::DeviceId device_ = 0;
  std::vector<KernelCost> costs_;  // every segment's kernels, back to back
  // With kept names: per entry of costs_, its kernel's name, which lies in a list the layout holds or,
  // for a kernel added alone to the graph, in a copy it keeps.
  bool keep_names_ = false;
  std::vector<std::string_view> names_;
  std::vector<hal::SharedKernels> held_lists_;
  std::deque<std::string> own_names_;
  std::vector<Segment> segments_;
  // Each collective call of the graph once (a repeated body's calls serve each of its iterations).
  std::vector<hal::CollectiveCall> calls_;
  std::size_t calls_kept_ = 0;
  double compute_ns_ = 0;
  PricedTime priced_;
  std::vector<double> segment_runs_;  // sum_compute's, kept for its room
};

}  // namespace nvl::fakegpu
