#pragma once
// The fast path: each member's completion time for a collective plan on idle, healthy links, solved
// offline with the same max-min model as the live flow model (progressive filling, then the next flow
// to finish, until all have), without runtime events. Flows within 0.5% of the elapsed time of their end
// finish in the same solve (the exact mode's flows each end on their own: tests hold the two within 1%),
// and a call whose busiest channel needs under 1% of its fixed cost is priced from that channel alone. Callers cache the answer by the collective's
// signature, so identical collectives are priced once.
#include <vector>

#include "fabric/collective_plan.h"
#include "fabric/water_fill.h"

namespace nvl::fabric {

class CollectivePricer {
 public:
  // A call whose busiest channel needs less than this share of its fixed cost is priced without solving.
  static constexpr double kLatencyBoundShare = 0.01;

  // Takes a plan to price and returns the channels it uses, once each, ascending (the caller checks
  // them before pricing). The plan must stay as it is until price().
  const std::vector<int>& load(const CollectivePlan& plan, const Fabric& fabric);
  // The loaded plan's flows crossing each of load()'s channels (once per crossing).
  const std::vector<int>& channel_flows() const { return channel_flows_; }
  // The loaded plan's member completion times, measured from the moment every member has arrived, the
  // wire bytes it puts on each of load()'s channels (for link utilisation), and when each of them carries
  // its last byte, in seconds after the data starts to move (the plan's overhead after the arrival).
  void price(int members, std::vector<rt::Duration>& done, std::vector<double>& channel_bytes,
             std::vector<double>& channel_seconds);

 private:
  // local_bytes_ from the loaded flows.
  void sum_channel_bytes(const CollectivePlan& plan);

  const CollectivePlan* plan_ = nullptr;
  WaterFill fill_;
  std::vector<int> local_;      // per fabric channel: its index in the plan's channels; -1 (all) between loads
  std::vector<int> global_;     // per local channel: the fabric channel
  std::vector<int> channels_;   // global_, ascending
  std::vector<int> offset_, path_, finished_;
  std::vector<double> cap_;
  std::vector<double> local_bytes_;    // per local channel: its wire bytes
  std::vector<double> channel_bytes_;  // the same per channel of channels_
  std::vector<int> channel_flows_;     // per channel of channels_: the flows crossing it
  std::vector<int> sorted_local_;      // per channel of channels_: its local index
  std::vector<double> busy_until_;     // per local channel: see price()'s channel_seconds
  std::vector<double> remaining_, done_below_;  // by flow; done_below_: what counts as arrived
  std::vector<double> finished_rate_;          // beside finished_: the rate each had
};

}  // namespace nvl::fabric
