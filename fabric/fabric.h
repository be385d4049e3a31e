#pragma once
// The emulated interconnect of one cluster: its topology, the flow model over its channels, routing
// (NVLink inside a domain, NICs and the leaf/spine network across), and link faults. Transfers complete
// through runtime callbacks; the HAL implementations (messages, RDMA, collectives) build on it.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "emu/rt/runtime.h"
#include "engine/hal/hal_error.h"
#include "engine/hal/rdma.h"
#include "fabric/flow_model.h"
#include "fabric/topology.h"

namespace nvl::fabric {

// One end of a transfer: a GPU's HBM or a host's memory. nic: the cluster NIC index the transfer leaves
// or enters by over the scale-out network; -1 takes the GPU's own NIC or the host's first.
struct Endpoint {
  enum class Kind : std::uint8_t { gpu, host };
  Kind kind = Kind::gpu;
  int index = 0;
  int nic = -1;
  static Endpoint gpu(hal::DeviceId d) { return Endpoint{Kind::gpu, d, -1}; }
  static Endpoint host(hal::HostId h, int nic = -1) { return Endpoint{Kind::host, h, nic}; }
};

struct Route {
  std::vector<int> channels;
  rt::Duration latency;
  bool nvlink = false;  // inside the NVLink domain (NVLink or C2C)
};

struct FabricOptions {
  rt::Duration usage_interval = rt::us(100);  // link utilisation buckets; zero: off
};

using TransferDone = std::function<void(const hal::HalError* error)>;

// One transfer() as it ended, for timelines: `channel` is the first channel of its route (-1: none).
struct TransferSpan {
  std::string_view op;
  int channel = -1;
  std::uint64_t bytes = 0;
  rt::Time start;
  rt::Time end;
  bool ok = true;
};
using TransferObserver = std::function<void(const TransferSpan& span)>;

class Fabric {
 public:
  Fabric(rt::Runtime& rt, ClusterSpec spec, FabricOptions opts = {});

  rt::Runtime& runtime() { return rt_; }
  const Topology& topology() const { return topo_; }
  const NodeProfile& profile() const { return topo_.spec().node; }
  FlowModel& flows() { return flows_; }
  const FlowModel& flows() const { return flows_; }

  // All-reduces in one NVLink domain run the kernel library's own all-reduce, timed from the profile's
  // measured_library_all_reduce table for it (none there: NCCL's). Call before any collective is priced.
  void use_kernel_library(const std::string& library);
  const MeasuredNcclTable* library_all_reduce() const { return library_all_reduce_.get(); }

  bool same_domain(hal::DeviceId a, hal::DeviceId b) const;
  hal::HostId host_of(const Endpoint& e) const;
  // The path from src to dst; throws hal::HalError naming the link, NIC or partition in the way.
  Route route(const Endpoint& src, const Endpoint& dst, hal::RdmaPath path) const;
  // route() between two GPUs by the automatic path, remembered: a collective plans thousands of flows
  // between the same GPUs. Appends the channels to `channels` and returns the latency; throws as route().
  rt::Duration append_gpu_route(hal::DeviceId src, hal::DeviceId dst, std::vector<int>& channels) const;
  // Changes whenever append_gpu_route forgets its memory, so that callers keeping routes know to drop them.
  std::uint64_t routes_version() const { return routes_version_; }

  // Moves `bytes` from src to dst. The flow carries bytes / efficiency on the wire (the achievable share
  // of link bandwidth) after `overhead` (posting, launch); done runs when the last byte has arrived.
  void transfer(const Endpoint& src, const Endpoint& dst, std::uint64_t bytes, hal::RdmaPath path, double efficiency,
                rt::Duration overhead, const std::string& op, TransferDone done);

  // A channel at its nominal capacity (no lane down or degraded).
  bool healthy(int channel) const;
  // Traffic priced analytically (a collective on the fast path, or the fast-forwarded calls of repeated
  // layers) holds its channels from now until `until`, carrying bytes[i] * scale on channels[i] as flows[i]
  // flows of its own (shared: every call of a cached collective holds the same lists; channels ascending).
  // It is counted in carried_bytes at once. A call's bytes move on channels[i] at an even rate from
  // `wire_from` after the start for seconds[i] (as they move alone: the launch before, the sync after move
  // nothing); repeated calls (`periodic`) move theirs evenly from `wire_from` (the compute before the
  // first call) to the span's end, a call's worth in each period. Held traffic shares its channels as
  // max-min says: when a flow starts on a held channel, one is there when the hold starts, or the holds
  // there that are moving data together want more than its capacity, the hold's rest becomes flows[i]
  // flows, from when its bytes would start to move, each capped at its share of the rate they move at
  // alone (a call's bytes[i] / seconds[i], repeated calls' average), and the owner is told `slowed`;
  // once every such flow has carried its bytes, and not before `until`, it is told `drained` (and
  // finishes then, not before). A held channel losing all its capacity before release() tells `lost`
  // with that channel (the traffic fails).
  struct HeldTraffic {
    std::shared_ptr<const std::vector<int>> channels;
    std::shared_ptr<const std::vector<double>> bytes;
    std::shared_ptr<const std::vector<int>> flows;
    std::shared_ptr<const std::vector<double>> seconds;
    rt::Duration wire_from;
    double scale = 1;
    bool periodic = false;
  };
  struct HoldEvents {
    std::function<void(int channel)> lost;
    std::function<void()> slowed;
    std::function<void()> drained;
  };
  std::uint64_t hold(HeldTraffic traffic, rt::Time until, HoldEvents events);
  void release(std::uint64_t hold_id);
  // Starts a flow of the flow model (as FlowModel::start), first turning held traffic on its channels into
  // flows that share them. Every flow of the fabric starts here.
  void start_flow(std::vector<int> path, double bytes, rt::Duration latency, FlowModel::Done done);
  double nominal_capacity(int channel) const { return nominal_[static_cast<std::size_t>(channel)]; }
  // Bytes a channel carried so far: its flows, plus collectives priced on the fast path (counted when
  // they start). For link utilisation in reports.
  double carried_bytes(int channel) const {
    return flows_.carried_bytes(channel) + held_bytes_[static_cast<std::size_t>(channel)];
  }
  // Told of every transfer() when it ends (one observer; empty: none, and nothing is tracked).
  void set_transfer_observer(TransferObserver observer) { transfer_observer_ = std::move(observer); }
  // Why a channel carries nothing: "link A<->B is down", "NIC X is down".
  std::string describe_down(int channel) const;
  hal::HalError error_for_channel(int channel, const std::string& op, hal::DeviceId device) const;

  // Faults, each recorded in the event log. Names are element names ("rack0/tray3/gpu2",
  // "rack0/nvswitch5", "rack0/tray3/nic1"); unknown names or unconnected pairs are std::invalid_argument.
  void set_link_down(std::string_view a, std::string_view b, bool down);
  // factor in (0, 1]: the links between a and b run at that share of their bandwidth; 1 restores.
  void degrade_link(std::string_view a, std::string_view b, double factor);
  // Down for `down_for`, up for `up_for`, `cycles` times, starting now.
  void flap_link(std::string_view a, std::string_view b, rt::Duration down_for, rt::Duration up_for, int cycles);
  // A whole element down (a NIC, an NVSwitch chip, a leaf, a spine): every link touching it.
  void set_element_down(std::string_view name, bool down);
  // Hosts in `a` cannot reach hosts in `b` over the scale-out network (messages and RDMA through NICs).
  void partition(const std::vector<hal::HostId>& a, const std::vector<hal::HostId>& b);
  void heal_partition();
  bool partitioned(hal::HostId a, hal::HostId b) const;

 private:
  bool link_up(int link) const;
  void update_channel(int channel);
  void update_links(const std::vector<int>& links);
  int element_or_throw(std::string_view name) const;
  std::vector<int> links_or_throw(std::string_view a, std::string_view b) const;
  void check(const Route& r, const Endpoint& src, const std::string& op) const;
  void append_nic_path(Route& r, const Endpoint& e, bool outbound) const;
  int nic_of(const Endpoint& e) const;
  // Drops append_gpu_route's memory (a partition changes which scale-out routes exist).
  void forget_routes();

  rt::Runtime& rt_;
  std::shared_ptr<const MeasuredNcclTable> library_all_reduce_;
  Topology topo_;
  std::vector<double> nominal_;
  FlowModel flows_;
  std::vector<char> link_down_;
  std::vector<double> link_factor_;
  std::vector<char> element_down_;
  struct Hold {
    std::uint64_t id;
    HeldTraffic traffic;
    HoldEvents events;
    std::int64_t start_ns = 0;
    std::int64_t until_ns = 0;
    // Per held channel: kHeld, kWaiting (its rest runs as flows once the call's data moves) or kFlowing.
    // Empty: all held.
    std::vector<char> flowing;
    int in_flight = 0;          // such flows not yet done
    bool slowed = false;        // the owner was told
    rt::TimerHandle drain_timer;
    rt::TimerHandle wire_timer;  // starts the waiting channels' flows
  };
  static constexpr char kHeld = 0, kWaiting = 1, kFlowing = 2;
  Hold* find_hold(std::uint64_t id);
  const Hold* find_hold(std::uint64_t id) const;
  void list_channels(const Hold& h);  // in holds_on_
  void unlist_channels(const Hold& h);
  // When the hold's data starts to move.
  static std::int64_t moving_from(const Hold& h);
  // The bytes the hold has still to move on its i-th channel at `now`, as if alone.
  double held_rest(const Hold& h, std::size_t i, std::int64_t now) const;
  // The hold's rest on its i-th channel runs as capped flows from now, or from when the call's data
  // starts to move; false when nothing was left to run.
  bool to_flow(Hold& h, std::size_t i);
  void start_held_flows(Hold& h, std::size_t i, double rest);
  // The rate the hold moves its bytes on its i-th channel at `now` (bytes/s), as if alone: a call's at
  // its wire rate within its wire time, repeated calls' on average from when their data starts to move
  // (moving_from: their lead into each period) to the span's end.
  double held_rate(const Hold& h, std::size_t i, std::int64_t now) const;
  // The sum of held_rate over the holds other than `h` still held on `channel`; infinity where one
  // runs there as flows to come (its call not yet moving data).
  double held_by_others(const Hold& h, int channel, std::int64_t now) const;
  // Every hold on the channel turns its rest there into a flow.
  void share_held(int channel);
  void maybe_drained(std::uint64_t hold_id);
  std::vector<std::int64_t> reserved_until_;
  std::vector<Hold> holds_;  // by id: few are held at once, and a hold is taken per collective call
  // Per channel, the holds on it, by id, and where the channel is among each one's: a rack's calls
  // look only at their own channels' holds, however many racks hold others elsewhere.
  struct HoldOnChannel {
    std::uint64_t id;
    std::size_t at;
  };
  std::vector<std::vector<HoldOnChannel>> holds_on_;
  std::uint64_t next_hold_ = 1;
  std::vector<int> partition_side_;  // per host: -1 none, 0 or 1
  // append_gpu_route's memory, filled as routes are asked for: per source GPU (a row once it has been
  // asked for), per destination. Links going down are checked on every use; a partition clears it.
  struct KnownRoute {
    int first = 0;  // into known_channels_
    int count = -1;  // -1: not asked for yet
    rt::Duration latency;
  };
  mutable std::vector<std::vector<KnownRoute>> known_routes_;
  mutable std::vector<int> known_channels_;
  std::uint64_t routes_version_ = 0;
  std::vector<double> held_bytes_;
  TransferObserver transfer_observer_;
};

}  // namespace nvl::fabric
