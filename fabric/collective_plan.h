#pragma once
// How a collective becomes flows on the topology, following what NCCL, DeepEP and TensorRT-LLM do:
// all-to-all as direct one-sided writes between every pair; all-reduce as a tree for small buffers,
// NVLS (NVLink SHARP: reduction in the NVSwitch) inside one NVLink domain, else a ring; all-gather and
// reduce-scatter as NVLS or ring; broadcast as a pipelined chain; send/recv as one flow per sender.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/hal/collectives.h"
#include "fabric/fabric.h"

namespace nvl::fabric {

struct PlannedFlow {
  int src_rank;
  int dst_rank;  // equal to src_rank for a flow to or from the switch (NVLS)
  int first_channel;  // its route: CollectivePlan::channels[first_channel, first_channel + channel_count)
  int channel_count;
  double wire_bytes;
  rt::Duration latency;
};

struct CollectivePlan {
  std::string algorithm;  // "one-sided", "ring", "tree", "nvls", "chain", "direct"
  bool measured = false;  // its idle time is the profile's measured one (fabric/measured_nccl_table.h)
  rt::Duration overhead;  // launch and setup before data moves
  // No member completes before overhead + sync_latency: the flags or barrier that every member waits for,
  // overlapping the data.
  rt::Duration sync_latency;
  std::vector<PlannedFlow> flows;
  // Every flow's route, one after another (one array rather than a vector per flow: an EP all-to-all has
  // thousands of flows). An all-to-all's flows point into the routes of pair_routes instead.
  std::vector<int> channels;
  // plan_collective's memory for all-to-all plans, kept for the next plan of the same members while the
  // fabric's routes stand (re-routing every pair per plan was a large part of pricing one): where each
  // pair's route lies in `channels`, filled as pairs are asked for.
  struct PairRoute {
    int first = -1;  // -1: not routed yet
    int count = 0;
    rt::Duration latency;
  };
  struct PairRoutes {
    std::vector<hal::DeviceId> members;
    std::uint64_t fabric_routes = 0;  // Fabric::routes_version() they were taken at
    bool valid = false;               // `channels` holds them (other plans reuse it)
    std::vector<PairRoute> routes;    // by src * members + dst
  };
  PairRoutes pair_routes;

  std::span<const int> route(const PlannedFlow& f) const {
    return {channels.data() + f.first_channel, static_cast<std::size_t>(f.channel_count)};
  }
};

// The kernel an all-to-all of this role runs (its launch, per-peer and sync costs and wire efficiency).
const AllToAllKernel& all_to_all_kernel(const CollectiveProfile& profile, hal::AllToAllRole role);

// ops[r] is member r's part; they have been checked to agree. Throws hal::HalError when a route is down.
// Fills `plan` afresh (reusing its buffers).
void plan_collective(const Fabric& fabric, const std::vector<hal::DeviceId>& members,
                     const std::vector<hal::SharedCollectiveOp>& ops, CollectivePlan& plan);

}  // namespace nvl::fabric
