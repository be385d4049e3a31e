#include "fabric/collective_pricer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nvl::fabric {

const std::vector<int>& CollectivePricer::load(const CollectivePlan& plan, const Fabric& fabric) {
  plan_ = &plan;
  // Local channel indices, in order of first use; each flow's path in them.
  local_.assign(fabric.topology().channels().size(), -1);
  global_.clear();
  cap_.clear();
  offset_.assign(1, 0);
  path_.clear();
  for (const auto& f : plan.flows) {
    for (int c : plan.route(f)) {
      auto& l = local_[static_cast<std::size_t>(c)];
      if (l < 0) {
        l = static_cast<int>(global_.size());
        global_.push_back(c);
        cap_.push_back(fabric.flows().capacity(c));
      }
      path_.push_back(l);
    }
    offset_.push_back(static_cast<int>(path_.size()));
  }
  fill_.set_flows(cap_.size(), offset_, path_);
  channels_.assign(global_.begin(), global_.end());
  std::sort(channels_.begin(), channels_.end());
  return channels_;
}

void CollectivePricer::price(int members, std::vector<rt::Duration>& done, std::vector<double>& channel_bytes) {
  const CollectivePlan& plan = *plan_;
  const std::size_t flows = plan.flows.size();
  // A channel's bytes summed over its flows in flow order (as the flows' own order would add them),
  // before any flow leaves the fill.
  channel_bytes.resize(channels_.size());
  for (std::size_t i = 0; i < channels_.size(); ++i) {
    double bytes = 0;
    for (int f : fill_.flows_on(local_[static_cast<std::size_t>(channels_[i])])) {
      bytes += plan.flows[static_cast<std::size_t>(f)].wire_bytes;
    }
    channel_bytes[i] = bytes;
  }
  done.assign(static_cast<std::size_t>(members), plan.overhead + plan.sync_latency);
  remaining_.resize(flows);
  done_below_.resize(flows);
  active_.clear();
  for (std::size_t i = 0; i < flows; ++i) {
    remaining_[i] = plan.flows[i].wire_bytes;
    done_below_[i] = 1e-9 * plan.flows[i].wire_bytes;
    active_.push_back(static_cast<int>(i));
  }
  // Solved again after each completion, with the finished flows taken out.
  double t = 0;  // seconds since the data started to move
  while (!active_.empty()) {
    fill_.solve(cap_, rate_);
    // The first completion: the least remaining / rate. The flows of a round share one rate, and
    // dividing by it keeps order, so its least remaining gives its least quotient exactly.
    double dt = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < fill_.rounds(); ++k) {
      const double rate = fill_.round_rate(k);
      if (rate <= 0) continue;
      double least = std::numeric_limits<double>::infinity();
      for (int i : fill_.round_flows(k)) least = std::min(least, remaining_[static_cast<std::size_t>(i)]);
      dt = std::min(dt, least / rate);
    }
    if (!std::isfinite(dt)) break;  // nothing can move: the plan's routes were checked, so capacities are zero
    t += dt;
    const rt::Duration data_done = plan.overhead + rt::ns(static_cast<std::int64_t>(std::ceil(t * 1e9)));
    std::size_t kept = 0;
    for (int i : active_) {
      const auto u = static_cast<std::size_t>(i);
      double& rem = remaining_[u];
      rem -= rate_[u] * dt;
      if (rem <= done_below_[u]) {
        const PlannedFlow& f = plan.flows[u];
        const rt::Duration end = data_done + f.latency;
        for (int m : {f.src_rank, f.dst_rank}) {
          auto& d = done[static_cast<std::size_t>(m)];
          d = std::max(d, end);
        }
        fill_.remove(i);
      } else {
        active_[kept++] = i;
      }
    }
    active_.resize(kept);
  }
}

}  // namespace nvl::fabric
