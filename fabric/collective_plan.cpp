#include "fabric/collective_plan.h"

#include <algorithm>
#include <bit>
#include <utility>
#include <vector>

namespace nvl::fabric {

namespace {

class Planner {
 public:
  // pairs: the flows are all-to-all ones (all_to_all), routed through plan.pair_routes.
  Planner(const Fabric& f, const std::vector<hal::DeviceId>& m, CollectivePlan& plan, bool pairs)
      : fabric_(f), members_(m), plan_(plan) {
    plan_.flows.clear();
    CollectivePlan::PairRoutes& known = plan_.pair_routes;
    const std::size_t n = members_.size();
    // (A plan moved from, to run as live flows, has no routes left.)
    if (pairs && known.valid && known.fabric_routes == fabric_.routes_version() && known.members == members_ &&
        known.routes.size() == n * n) {
      return;
    }
    plan_.channels.clear();
    known.valid = pairs;
    if (!pairs) return;
    known.members = members_;
    known.fabric_routes = fabric_.routes_version();
    known.routes.assign(n * n, CollectivePlan::PairRoute{});
  }

  void flow(int src, int dst, double bytes, double efficiency) {
    if (bytes <= 0 || src == dst) return;
    efficiency_ = efficiency;
    const int first = static_cast<int>(plan_.channels.size());
    const rt::Duration latency = fabric_.append_gpu_route(members_[static_cast<std::size_t>(src)],
                                                          members_[static_cast<std::size_t>(dst)], plan_.channels);
    max_latency_ = std::max(max_latency_, latency);
    plan_.flows.push_back(
        PlannedFlow{src, dst, first, static_cast<int>(plan_.channels.size()) - first, bytes / efficiency, latency});
  }
  // flow() for every pair of an all-to-all (ops[i].send_bytes[j] from member i to j). Each pair is routed
  // once, as flow() would route it, and checked on every use as Fabric::append_gpu_route checks its own
  // memory. Counts and the latency bound are kept in locals: the flows' stores could alias members.
  void all_to_all(const std::vector<hal::SharedCollectiveOp>& ops, double efficiency) {
    const std::size_t n = members_.size();
    std::vector<CollectivePlan::PairRoute>& known = plan_.pair_routes.routes;
    const bool links_down = fabric_.flows().dead_channels() > 0;
    rt::Duration max_latency = max_latency_;
    for (std::size_t i = 0; i < n; ++i) {
      const std::vector<std::uint64_t>& row = ops[i]->send_bytes;
      for (std::size_t j = 0; j < n; ++j) {
        if (row[j] == 0 || i == j) continue;
        CollectivePlan::PairRoute& route = known[i * n + j];
        if (route.first < 0) {
          route.first = static_cast<int>(plan_.channels.size());
          route.latency = fabric_.append_gpu_route(members_[i], members_[j], plan_.channels);
          route.count = static_cast<int>(plan_.channels.size()) - route.first;
        } else if (links_down) {
          check_route(route, members_[i], members_[j]);
        }
        max_latency = std::max(max_latency, route.latency);
        plan_.flows.push_back(PlannedFlow{static_cast<int>(i), static_cast<int>(j), route.first, route.count,
                                          static_cast<double>(row[j]) / efficiency, route.latency});
      }
    }
    max_latency_ = max_latency;
  }
  // NVLS: traffic between a member and the switch, on its NVLink channel up (to_switch) or down.
  void switch_flow(int rank, bool to_switch, double bytes, double efficiency) {
    if (bytes <= 0) return;
    efficiency_ = efficiency;
    const GpuPorts& g = fabric_.topology().gpu(members_[static_cast<std::size_t>(rank)]);
    const int ch = to_switch ? g.nvl_up : g.nvl_down;
    if (fabric_.flows().capacity(ch) <= 0) throw fabric_.error_for_channel(ch, "nvls", members_[static_cast<std::size_t>(rank)]);
    const rt::Duration lat = fabric_.topology().channels()[static_cast<std::size_t>(ch)].latency;
    max_latency_ = std::max(max_latency_, lat * 2);
    plan_.flows.push_back(PlannedFlow{rank, rank, static_cast<int>(plan_.channels.size()), 1, bytes / efficiency, lat});
    plan_.channels.push_back(ch);
  }
  void finish(const char* algorithm, rt::Duration overhead, rt::Duration sync) {
    plan_.algorithm = algorithm;
    plan_.measured = false;
    plan_.overhead = overhead;
    plan_.sync_latency = sync + max_latency_;
  }
  // Makes the finished plan take `measured` on idle, healthy links, keeping its flows' routes: the time
  // beyond the measured latency floor goes to moving the data (the flows' wire bytes scaled to fill it,
  // never faster than the links' rate), the rest to the fixed overhead. Under other traffic only the
  // data part stretches. On idle links the call ends at overhead + the busiest channel's time + the
  // longest flow latency, or at overhead + sync latency if that is later.
  void fit_to(const MeasuredCollectiveTime& measured) {
    // Each channel's load: (channel, wire bytes) of every flow's hops, summed per channel after sorting.
    std::vector<std::pair<int, double>> hops;
    for (const PlannedFlow& f : plan_.flows) {
      for (int ch : plan_.route(f)) hops.emplace_back(ch, f.wire_bytes);
    }
    std::sort(hops.begin(), hops.end());
    double busiest_s = 0;
    for (std::size_t i = 0; i < hops.size();) {
      double bytes = 0;
      const int ch = hops[i].first;
      for (; i < hops.size() && hops[i].first == ch; ++i) bytes += hops[i].second;
      busiest_s = std::max(busiest_s, bytes / fabric_.nominal_capacity(ch));
    }
    double scale = 1;
    if (busiest_s > 0) {
      // The plan's flows at the links' full rate are its wire bytes times its efficiency (one for all).
      const double full_rate = efficiency_;
      const double data_ns = std::max(measured.ns - measured.latency_ns, 0.0);
      scale = std::max(data_ns / (busiest_s * 1e9), full_rate);
      for (PlannedFlow& f : plan_.flows) f.wire_bytes *= scale;
    }
    rt::Duration flow_latency;
    for (const PlannedFlow& f : plan_.flows) flow_latency = std::max(flow_latency, f.latency);
    const double end_ns = std::max(busiest_s * scale * 1e9 + static_cast<double>(flow_latency.ns()),
                                   static_cast<double>(max_latency_.ns()));
    const double fixed_ns = measured.ns - end_ns;
    plan_.overhead = rt::ns(static_cast<std::int64_t>(std::max(fixed_ns, 0.0)));
    plan_.sync_latency = max_latency_;
    plan_.measured = true;
  }

 private:
  // A link of a known route may have gone down since: route() then names it, as it would have without
  // the memory.
  void check_route(const CollectivePlan::PairRoute& route, hal::DeviceId from, hal::DeviceId to) const {
    const auto first = plan_.channels.begin() + route.first;
    if (std::any_of(first, first + route.count, [&](int c) { return fabric_.flows().capacity(c) <= 0; })) {
      fabric_.route(Endpoint::gpu(from), Endpoint::gpu(to), hal::RdmaPath::automatic);
    }
  }

  const Fabric& fabric_;
  const std::vector<hal::DeviceId>& members_;
  CollectivePlan& plan_;
  rt::Duration max_latency_;
  double efficiency_ = 1;  // the plan's kernel's: its flows' wire bytes are their bytes over it
};

bool one_domain(const Fabric& f, const std::vector<hal::DeviceId>& m) {
  return std::all_of(m.begin(), m.end(), [&](hal::DeviceId d) { return f.same_domain(d, m.front()); });
}

int ceil_log2(int n) { return n <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<unsigned>(n - 1))); }

}  // namespace

const AllToAllKernel& all_to_all_kernel(const CollectiveProfile& profile, hal::AllToAllRole role) {
  return role == hal::AllToAllRole::moe_dispatch  ? profile.a2a_dispatch
         : role == hal::AllToAllRole::moe_combine ? profile.a2a_combine
                                                  : profile.a2a_plain;
}

void plan_collective(const Fabric& fabric, const std::vector<hal::DeviceId>& members,
                     const std::vector<hal::SharedCollectiveOp>& ops, CollectivePlan& plan) {
  const CollectiveProfile& cp = fabric.profile().collectives;
  const int n = static_cast<int>(members.size());
  const hal::CollectiveOp& op = *ops.front();
  const double s = static_cast<double>(op.bytes);
  const double dn = static_cast<double>(n);
  const bool nvls = cp.nvls_available && one_domain(fabric, members) && n > 1 && op.bytes > cp.tree_max_bytes;
  Planner p(fabric, members, plan, op.kind == hal::CollectiveKind::all_to_all);
  auto ring = [&](double per_rank, int steps, const char* name) {
    for (int r = 0; r < n; ++r) p.flow(r, (r + 1) % n, per_rank, cp.ring.efficiency);
    return p.finish(name, cp.ring.launch + cp.ring.per_step * steps, rt::Duration());
  };
  switch (op.kind) {
    case hal::CollectiveKind::all_to_all: {
      const AllToAllKernel& k = all_to_all_kernel(cp, op.role);
      p.all_to_all(ops, k.efficiency);
      return p.finish("one-sided", k.launch + k.per_peer * (n - 1), k.sync);
    }
    case hal::CollectiveKind::all_reduce:
      if (op.bytes <= cp.tree_max_bytes || n <= 2) {
        for (int r = 1; r < n; ++r) {
          p.flow(r, (r - 1) / 2, s, cp.tree.efficiency);
          p.flow((r - 1) / 2, r, s, cp.tree.efficiency);
        }
        p.finish("tree", cp.tree.launch + cp.tree.per_step * (2 * ceil_log2(n)), rt::Duration());
        break;
      }
      if (nvls) {
        // Reduce-scatter through the switch (every member sends all, gets its reduced share back),
        // then all-gather by multicast (every member sends its share, gets the whole).
        for (int r = 0; r < n; ++r) {
          p.switch_flow(r, true, s * (1 + 1 / dn), cp.nvls.efficiency);
          p.switch_flow(r, false, s * (1 + 1 / dn), cp.nvls.efficiency);
        }
        p.finish("nvls", cp.nvls.launch + cp.nvls.per_step * 2, rt::Duration());
        break;
      }
      ring(2 * (dn - 1) / dn * s, 2 * (n - 1), "ring");
      break;
    case hal::CollectiveKind::all_gather:
      if (nvls) {
        for (int r = 0; r < n; ++r) {
          p.switch_flow(r, true, s / dn, cp.nvls.efficiency);
          p.switch_flow(r, false, s * (dn - 1) / dn, cp.nvls.efficiency);
        }
        p.finish("nvls", cp.nvls.launch + cp.nvls.per_step, rt::Duration());
        break;
      }
      ring((dn - 1) / dn * s, n - 1, "ring");
      break;
    case hal::CollectiveKind::reduce_scatter:
      if (nvls) {
        for (int r = 0; r < n; ++r) {
          p.switch_flow(r, true, s, cp.nvls.efficiency);
          p.switch_flow(r, false, s / dn, cp.nvls.efficiency);
        }
        p.finish("nvls", cp.nvls.launch + cp.nvls.per_step, rt::Duration());
        break;
      }
      ring((dn - 1) / dn * s, n - 1, "ring");
      break;
    case hal::CollectiveKind::broadcast:
      for (int k = 0; k + 1 < n; ++k) p.flow((op.root + k) % n, (op.root + k + 1) % n, s, cp.ring.efficiency);
      return p.finish("chain", cp.ring.launch + cp.ring.per_step * (n - 1), rt::Duration());
    case hal::CollectiveKind::send_recv:
      for (int r = 0; r < n; ++r) {
        const auto& o = *ops[static_cast<std::size_t>(r)];
        if (o.peer >= 0) p.flow(r, o.peer, static_cast<double>(o.bytes), cp.ring.efficiency);
      }
      return p.finish("direct", cp.ring.launch, rt::Duration());
  }
  // All-reduce, all-gather, reduce-scatter: timed as measured where the profile has the table; an
  // all-reduce in one NVLink domain as the kernel library's own where it is measured (it moves the data
  // over the same links).
  const MeasuredNcclTable* table = cp.measured_nccl.get();
  if (op.kind == hal::CollectiveKind::all_reduce && fabric.library_all_reduce() != nullptr && one_domain(fabric, members)) {
    table = fabric.library_all_reduce();
  }
  if (table != nullptr) {
    if (const auto measured = table->time(op.kind, n, op.bytes)) p.fit_to(*measured);
  }
}

}  // namespace nvl::fabric
