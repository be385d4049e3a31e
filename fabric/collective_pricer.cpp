#include "fabric/collective_pricer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

namespace nvl::fabric {

namespace {

// A flow within this share of the elapsed time of its end ends in the same solve (see price()).
constexpr double kFinishSlack = 0.005;

// The least remaining bytes among a round's flows, by independent running minimums (a single one would
// be a chain of dependent compares). A minimum does not depend on the order it is taken in.
double least_remaining(std::span<const int> flows, const double* remaining) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  double m0 = kNone, m1 = kNone, m2 = kNone, m3 = kNone;
  std::size_t k = 0;
  for (; k + 4 <= flows.size(); k += 4) {
    m0 = std::min(m0, remaining[static_cast<std::size_t>(flows[k])]);
    m1 = std::min(m1, remaining[static_cast<std::size_t>(flows[k + 1])]);
    m2 = std::min(m2, remaining[static_cast<std::size_t>(flows[k + 2])]);
    m3 = std::min(m3, remaining[static_cast<std::size_t>(flows[k + 3])]);
  }
  for (; k < flows.size(); ++k) m0 = std::min(m0, remaining[static_cast<std::size_t>(flows[k])]);
  return std::min(std::min(m0, m1), std::min(m2, m3));
}

}  // namespace

void CollectivePricer::sum_channel_bytes(const CollectivePlan& plan) {
  // Each channel's sum runs over its flows in flow order (as the flows' own order would add them). Four
  // channels at a time, as independent chains of additions: one at a time waits on every addition.
  const std::size_t channels = global_.size();
  local_bytes_.resize(channels);
  auto bytes = [&](int f) { return plan.flows[static_cast<std::size_t>(f)].wire_bytes; };
  std::size_t l = 0;
  for (; l + 4 <= channels; l += 4) {
    std::span<const int> on[4];
    double sum[4] = {0, 0, 0, 0};
    std::size_t common = std::numeric_limits<std::size_t>::max();
    for (std::size_t q = 0; q < 4; ++q) {
      on[q] = fill_.flows_on(static_cast<int>(l + q));
      common = std::min(common, on[q].size());
    }
    for (std::size_t k = 0; k < common; ++k) {
      sum[0] += bytes(on[0][k]);
      sum[1] += bytes(on[1][k]);
      sum[2] += bytes(on[2][k]);
      sum[3] += bytes(on[3][k]);
    }
    for (std::size_t q = 0; q < 4; ++q) {
      for (std::size_t k = common; k < on[q].size(); ++k) sum[q] += bytes(on[q][k]);
      local_bytes_[l + q] = sum[q];
    }
  }
  for (; l < channels; ++l) {
    double sum = 0;
    for (int f : fill_.flows_on(static_cast<int>(l))) sum += bytes(f);
    local_bytes_[l] = sum;
  }
}

const std::vector<int>& CollectivePricer::load(const CollectivePlan& plan, const Fabric& fabric) {
  plan_ = &plan;
  // Local channel indices, in order of first use; each flow's path in them. local_ is all -1 between
  // loads.
  local_.resize(fabric.topology().channels().size(), -1);
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
  sum_channel_bytes(plan);
  channels_.assign(global_.begin(), global_.end());
  std::sort(channels_.begin(), channels_.end());
  channel_bytes_.resize(channels_.size());
  channel_flows_.resize(channels_.size());
  sorted_local_.resize(channels_.size());
  for (std::size_t i = 0; i < channels_.size(); ++i) {
    sorted_local_[i] = local_[static_cast<std::size_t>(channels_[i])];
    channel_bytes_[i] = local_bytes_[static_cast<std::size_t>(sorted_local_[i])];
    channel_flows_[i] = static_cast<int>(fill_.flows_on(sorted_local_[i]).size());
  }
  for (int c : global_) local_[static_cast<std::size_t>(c)] = -1;
  return channels_;
}

void CollectivePricer::price(int members, std::vector<rt::Duration>& done, std::vector<double>& channel_bytes,
                             std::vector<double>& channel_seconds) {
  const CollectivePlan& plan = *plan_;
  const std::size_t flows = plan.flows.size();
  channel_bytes.assign(channel_bytes_.begin(), channel_bytes_.end());
  // Per local channel: when its last byte arrives, in seconds after the data started to move.
  busy_until_.assign(cap_.size(), 0.0);
  const auto sorted_busy = [&] {
    channel_seconds.resize(sorted_local_.size());
    for (std::size_t i = 0; i < sorted_local_.size(); ++i) {
      channel_seconds[i] = busy_until_[static_cast<std::size_t>(sorted_local_[i])];
    }
  };
  done.assign(static_cast<std::size_t>(members), plan.overhead + plan.sync_latency);
  remaining_.resize(flows);
  done_below_.resize(flows);
  finished_.resize(flows);
  finished_rate_.resize(flows);
  // Plain pointers in locals: stores through the arrays could otherwise be taken to change the members.
  double* remaining = remaining_.data();
  double* done_below = done_below_.data();
  for (std::size_t i = 0; i < flows; ++i) {
    remaining[i] = plan.flows[i].wire_bytes;
    done_below[i] = 1e-9 * plan.flows[i].wire_bytes;
  }
  std::size_t active_count = flows;
  // A latency-bound call (a decode step's all-to-all moves tens of KB against microseconds of fixed
  // cost): when even its busiest channel needs under kLatencyBoundShare of the fixed cost, each member is
  // done when every flow of its could be (that channel's time, then its own path's latency). The error is
  // below that channel's time, so below that share of the call; the solves would cost a thousand times more.
  double busiest_s = 0;
  for (std::size_t l = 0; l < cap_.size(); ++l) {
    if (cap_[l] > 0) busiest_s = std::max(busiest_s, local_bytes_[l] / cap_[l]);
  }
  if (busiest_s * 1e9 < kLatencyBoundShare * static_cast<double>((plan.overhead + plan.sync_latency).ns())) {
    busy_until_.assign(cap_.size(), busiest_s);  // every flow counts as done when the busiest channel is
    sorted_busy();
    const rt::Duration data = plan.overhead + rt::ns(static_cast<std::int64_t>(std::ceil(busiest_s * 1e9)));
    for (const PlannedFlow& f : plan.flows) {
      for (int m : {f.src_rank, f.dst_rank}) {
        auto& d = done[static_cast<std::size_t>(m)];
        d = std::max(d, data + f.latency);
      }
    }
    return;
  }
  // Solved again after each completion, with the finished flows taken out.
  double t = 0;  // seconds since the data started to move
  while (active_count > 0) {
    fill_.solve(cap_);
    // The first completion: the least remaining / rate. The flows of a round share one rate, and
    // dividing by it keeps order, so its least remaining gives its least quotient exactly.
    double dt = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < fill_.rounds(); ++k) {
      const double rate = fill_.round_rate(k);
      if (rate <= 0) continue;
      dt = std::min(dt, least_remaining(fill_.round_flows(k), remaining) / rate);
    }
    if (!std::isfinite(dt)) break;  // nothing can move: the plan's routes were checked, so capacities are zero
    t += dt;
    // Flows this close to done end in this solve too, at the time their rate now gives: an all-to-all of
    // unequal sizes has a completion per flow, and solving after each would cost thousands of solves.
    // They free their share up to kFinishSlack of the elapsed time early.
    const double slack = kFinishSlack * t;
    // Round by round, every flow still in the set (the rounds hold each once), at its round's rate. The
    // finished ones are listed in finished_, with their rates, then handled. A few flows of hundreds end
    // in a solve, so the branch is mostly predicted; listing without one would make each flow wait on
    // the last one's test.
    int* finished = finished_.data();
    double* finished_rate = finished_rate_.data();
    std::size_t finished_count = 0;
    for (std::size_t k = 0; k < fill_.rounds(); ++k) {
      const double rate = fill_.round_rate(k);
      const double moved = rate * dt;
      const double close = rate * slack;
      for (const int i : fill_.round_flows(k)) {
        const auto u = static_cast<std::size_t>(i);
        const double rem = remaining[u] - moved;
        remaining[u] = rem;
        if (rem <= done_below[u] || rem <= close) {
          finished[finished_count] = i;
          finished_rate[finished_count] = rate;
          ++finished_count;
        }
      }
    }
    for (std::size_t k = 0; k < finished_count; ++k) {
      const auto u = static_cast<std::size_t>(finished[k]);
      const PlannedFlow& f = plan.flows[u];
      const double left = remaining[u] > done_below[u] ? remaining[u] / finished_rate[k] : 0;
      for (int p = offset_[u]; p < offset_[u + 1]; ++p) {
        double& busy = busy_until_[static_cast<std::size_t>(path_[static_cast<std::size_t>(p)])];
        busy = std::max(busy, t + left);
      }
      const rt::Duration end = plan.overhead + rt::ns(static_cast<std::int64_t>(std::ceil((t + left) * 1e9))) + f.latency;
      for (int m : {f.src_rank, f.dst_rank}) {
        auto& d = done[static_cast<std::size_t>(m)];
        d = std::max(d, end);
      }
      fill_.remove(finished[k]);
    }
    active_count -= finished_count;
  }
  sorted_busy();
}

}  // namespace nvl::fabric
