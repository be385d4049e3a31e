#include "fabric/collective_pricer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nvl::fabric {

std::vector<rt::Duration> CollectivePricer::price(const CollectivePlan& plan, int members, const Fabric& fabric) {
  std::vector<rt::Duration> done(static_cast<std::size_t>(members), plan.overhead + plan.sync_latency);
  const std::size_t flows = plan.flows.size();
  local_.assign(fabric.topology().channels().size(), -1);
  cap_.clear();
  for (const auto& f : plan.flows) {
    for (int c : f.channels) {
      auto& l = local_[static_cast<std::size_t>(c)];
      if (l < 0) {
        l = static_cast<int>(cap_.size());
        cap_.push_back(fabric.flows().capacity(c));
      }
    }
  }
  remaining_.resize(flows);
  active_.clear();
  for (std::size_t i = 0; i < flows; ++i) {
    remaining_[i] = plan.flows[i].wire_bytes;
    active_.push_back(static_cast<int>(i));
  }
  double t = 0;  // seconds since the data started to move
  auto finish = [&](int i) {
    const PlannedFlow& f = plan.flows[static_cast<std::size_t>(i)];
    const rt::Duration end = plan.overhead + rt::ns(static_cast<std::int64_t>(std::ceil(t * 1e9))) + f.latency;
    for (int m : {f.src_rank, f.dst_rank}) {
      auto& d = done[static_cast<std::size_t>(m)];
      d = std::max(d, end);
    }
  };
  while (!active_.empty()) {
    offset_.assign(1, 0);
    path_.clear();
    for (int i : active_) {
      for (int c : plan.flows[static_cast<std::size_t>(i)].channels) path_.push_back(local_[static_cast<std::size_t>(c)]);
      offset_.push_back(static_cast<int>(path_.size()));
    }
    fill_.solve(cap_, offset_, path_, rate_);
    double dt = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < active_.size(); ++k) {
      if (rate_[k] > 0) dt = std::min(dt, remaining_[static_cast<std::size_t>(active_[k])] / rate_[k]);
    }
    if (!std::isfinite(dt)) break;  // nothing can move: the plan's routes were checked, so capacities are zero
    t += dt;
    std::size_t kept = 0;
    for (std::size_t k = 0; k < active_.size(); ++k) {
      const int i = active_[k];
      double& rem = remaining_[static_cast<std::size_t>(i)];
      rem -= rate_[k] * dt;
      if (rem <= 1e-9 * plan.flows[static_cast<std::size_t>(i)].wire_bytes) {
        finish(i);
      } else {
        active_[kept++] = i;
      }
    }
    active_.resize(kept);
  }
  return done;
}

}  // namespace nvl::fabric
