#pragma once
// Flow-level bandwidth sharing. A flow moves bytes along a path of channels; concurrent flows share every
// channel max-min fairly. Rates are recomputed when a flow starts or ends or a capacity changes, and
// only for the connected component of flows that share channels with the change; changes at one instant
// are coalesced into one recompute. Completions are runtime callbacks (one timer for the earliest).
#include <cstdint>
#include <limits>
#include <functional>
#include <algorithm>
#include <vector>

#include "emu/rt/runtime.h"
#include "fabric/usage_recorder.h"
#include "fabric/water_fill.h"

namespace nvl::fabric {

class FlowModel {
 public:
  static constexpr int kNoFailure = -1;
  // Runs when the flow's last byte has arrived (its path latency after draining): failed_channel is
  // kNoFailure, or the channel whose capacity went to zero under it.
  using Done = std::function<void(int failed_channel)>;

  FlowModel(rt::Runtime& rt, std::vector<double> capacity_bytes_per_s, rt::Duration usage_interval);
  FlowModel(const FlowModel&) = delete;
  FlowModel& operator=(const FlowModel&) = delete;

  // A flow with no channels or no bytes completes after `latency` alone. max_rate > 0 caps its rate
  // (bytes/s): traffic that needs no more than a known average, sharing its channels with the rest.
  void start(std::vector<int> path, double bytes, rt::Duration latency, Done done, double max_rate = 0);
  // Zero fails every flow on the channel (the caller reroutes or reports).
  void set_capacity(int channel, double bytes_per_s);

  double capacity(int channel) const { return channels_[static_cast<std::size_t>(channel)].capacity; }
  // Channels without capacity (every link down): none on a healthy fabric, so routes need no check.
  std::size_t dead_channels() const { return dead_channels_; }
  // Sum of the rates of the flows on the channel, bytes/s.
  double load(int channel) const { return channels_[static_cast<std::size_t>(channel)].load; }
  std::size_t flows_on(int channel) const { return channels_[static_cast<std::size_t>(channel)].flows.size(); }
  // The most the channel's flows can take (bytes/s): the sum of their caps, infinity when one has none.
  double demand(int channel) const {
    const ChannelState& ch = channels_[static_cast<std::size_t>(channel)];
    return ch.uncapped > 0 ? std::numeric_limits<double>::infinity() : ch.capped;
  }
  // Bytes the channel's flows have carried up to now (for link utilisation in reports).
  double carried_bytes(int channel) const;
  std::size_t active() const { return active_; }
  std::uint64_t recomputes() const { return recomputes_; }
  // Flows re-rated over all recomputes (the incremental cost).
  std::uint64_t flows_rerated() const { return rerated_; }
  // Runs a pending recompute now (the benchmark measures it directly).
  void recompute_now() { recompute(); }
  const UsageRecorder& usage() const;

 private:
  struct Flow {
    std::vector<int> path;
    std::vector<int> slot_in_channel;
    double remaining = 0;  // bytes
    double rate = 0;       // bytes/s
    std::int64_t updated_ns = 0;
    std::int64_t finish_ns = 0;
    rt::Duration latency;
    double max_rate = 0;  // 0: uncapped
    Done done;
    std::uint32_t stamp = 0;
    std::uint32_t generation = 0;  // one more at each reuse of the slot
    bool alive = false;
  };
  struct ChannelState {
    double capacity = 0;
    double load = 0;
    std::int64_t since_ns = 0;
    double carried_bytes = 0;  // up to since_ns
    std::vector<int> flows;
    int uncapped = 0;   // flows without a max_rate
    double capped = 0;  // the sum of the capped flows' max_rate
    std::uint32_t stamp = 0;
    int local = 0;
  };

  void mark_dirty(int channel);
  void schedule_recompute();
  void recompute();
  void arm_timer();
  void on_timer();
  // Unlinks a flow from its channels (marking them dirty) and frees it; returns its callback.
  Done remove(int flow);
  void settle(Flow& f, std::int64_t now_ns);

  rt::Runtime& rt_;
  std::vector<ChannelState> channels_;
  std::size_t dead_channels_ = 0;
  std::vector<Flow> flows_;
  std::vector<int> free_;
  std::size_t active_ = 0;
  std::vector<int> dirty_;
  bool recompute_pending_ = false;
  // Flows by finish time, earliest (then lowest id) first, as a heap that keeps stale entries: a
  // recompute re-times thousands of flows of an all-to-all at once, and pushing each anew is far cheaper
  // than moving it in an ordered set. An entry stands while its flow is alive, of the same generation,
  // and still due at its time; the others are dropped as they reach the top.
  struct Due {
    std::int64_t at_ns;
    int flow;
    std::uint32_t generation;
    bool operator>(const Due& o) const { return at_ns != o.at_ns ? at_ns > o.at_ns : flow > o.flow; }
  };
  bool stands(const Due& d) const;
  void push_due(int flow);
  // Drops stale entries off the top; false when none is left.
  bool clean_top();
  std::vector<Due> finish_;
  rt::TimerHandle timer_;
  std::int64_t timer_at_ = -1;
  std::uint32_t stamp_ = 0;
  std::uint64_t recomputes_ = 0;
  std::uint64_t rerated_ = 0;
  UsageRecorder usage_;
  WaterFill fill_;
  // Scratch for one recompute.
  std::vector<int> comp_flows_, comp_channels_, offset_, path_;
  std::vector<double> cap_, rate_;
};

}  // namespace nvl::fabric
