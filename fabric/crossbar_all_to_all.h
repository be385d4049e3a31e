#pragma once
// The fast path's pricing of an all-to-all on one switch layer: where every pair's route is just its
// source's egress channel and its destination's ingress channel (one NVLink domain), each flow s->d
// ends when the busier of those two has drained at its capacity (under max-min sharing that channel
// carries its whole load at full rate), plus the pair's latency; a member is done at its last flow's
// end. O(members^2) from the byte matrix, with no flow plan and no solve: a sampled-routing all-to-all
// is new every call, and progressive filling over its 4,032 flows cost milliseconds. The channels'
// bytes and flow counts are the ones the full plan gives, added in the same order. Tests hold it to the
// exact mode within 1%.
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/hal/collectives.h"
#include "fabric/fabric.h"

namespace nvl::fabric {

class CrossbarAllToAll {
 public:
  struct Priced {
    std::vector<int> channels;            // every channel used, once, ascending
    std::vector<double> channel_bytes;    // wire bytes on each
    std::vector<int> channel_flows;       // the pairs crossing each
    std::vector<double> channel_seconds;  // when each carries its last byte, from wire_from
    rt::Duration wire_from;               // the launch: the data moves from then on
    std::vector<rt::Duration> done;       // per member, from the moment every member has arrived
  };
  // Prices `ops` (an all-to-all whose parts agree) into `out`; false, leaving it unspecified, where a
  // pair of the members routes otherwise or a channel it needs has no capacity (the full plan then
  // prices it, or names the link down).
  bool price(const Fabric& fabric, const std::vector<hal::DeviceId>& members,
             const std::vector<hal::SharedCollectiveOp>& ops, Priced& out);

 private:
  // Whether every pair routes over its two channels, checked once per set of members and fabric routes.
  bool crossbar(const Fabric& fabric, const std::vector<hal::DeviceId>& members);

  // A channel entry's channel: entries 0..n-1 are the members' egress channels, n..2n-1 their ingress ones.
  int channel(int entry) const {
    const auto e = static_cast<std::size_t>(entry);
    return e < up_.size() ? up_[e] : down_[e - up_.size()];
  }
  // peers_ from the byte matrix: the members each member sends to (a sender's own entry never counts).
  void list_pairs(const std::vector<hal::SharedCollectiveOp>& ops);
  // Calls visit(j) for each member j that member i sends to, ascending.
  template <typename Visit>
  void for_each_pair(std::size_t i, Visit&& visit) const {
    const int* peers = peers_.data() + i * members_.size();
    for (std::size_t k = 0; k < peer_count_[i]; ++k) visit(static_cast<std::size_t>(peers[k]));
  }

  // The ends of every pair's flow on each of its two channels, shared equally there among that channel's
  // flows alone, in seconds from the start of the data (end_up_, end_down_).
  void share(const Fabric& fabric, const std::vector<hal::SharedCollectiveOp>& ops, double efficiency);

  std::vector<hal::DeviceId> members_;  // what crossbar_ was checked for
  std::uint64_t routes_version_ = 0;
  bool checked_ = false;
  bool crossbar_ = false;
  std::vector<int> up_, down_;           // per member: its egress and ingress channel
  std::vector<rt::Duration> latency_;    // per pair, by src * members + dst
  std::vector<double> load_up_, load_down_;  // per member: wire bytes on its channels
  std::vector<int> flows_up_, flows_down_;
  std::vector<int> by_channel_;          // every channel entry, by channel
  std::vector<int> order_;               // the used channels' entries, by channel
  std::vector<int> peers_;               // per member, from member * members: the members it sends to
  std::vector<std::size_t> peer_count_;  // per member: how many
  // share()'s: every channel entry's flows (wire bytes, peer), entry e's from first_[e] on (next_: the
  // cursors filling them), and per pair its end on each of its channels alone.
  std::vector<std::pair<double, int>> sizes_;
  std::vector<int> first_, next_;
  std::vector<double> end_up_, end_down_;
  std::vector<double> last_up_, last_down_;  // per member: its channels' last flow's end
};

}  // namespace nvl::fabric
