#include "engine/router/routing_policy.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nvl::engine {

std::int32_t RoundRobinPolicy::choose(const RouteInput& in) {
  const auto n = static_cast<std::int32_t>(in.loads.size());
  for (std::int32_t i = 0; i < n; ++i) {
    const std::int32_t r = (next_ + i) % n;
    if (in.loads[static_cast<std::size_t>(r)].healthy) {
      next_ = (r + 1) % n;
      return r;
    }
  }
  return -1;
}

double LoadWeights::score(const RankLoad& l) const {
  return requests * static_cast<double>(l.requests()) +
         tokens_in_flight_per_1k * static_cast<double>(l.tokens_in_flight) / 1e3 -
         free_kv_per_1k_blocks * static_cast<double>(l.free_kv_blocks) / 1e3;
}

std::int32_t LeastLoadPolicy::choose(const RouteInput& in) {
  std::int32_t best = -1;
  double best_score = 0;
  for (std::size_t r = 0; r < in.loads.size(); ++r) {
    const RankLoad& l = in.loads[r];
    if (!l.healthy) continue;
    const double score = weights_.score(l);
    if (best >= 0) {
      const RankLoad& b = in.loads[static_cast<std::size_t>(best)];
      if (score > best_score || (score == best_score && l.tokens_in_flight >= b.tokens_in_flight)) continue;
    }
    best = static_cast<std::int32_t>(r);
    best_score = score;
  }
  return best;
}

std::int32_t CacheAwarePolicy::choose(const RouteInput& in) {
  std::int64_t lo = INT64_MAX, hi = 0;
  for (const RankLoad& l : in.loads) {
    if (!l.healthy) continue;
    lo = std::min(lo, l.requests());
    hi = std::max(hi, l.requests());
  }
  if (lo == INT64_MAX) return -1;
  const bool imbalanced = hi - lo > opts_.balance_abs_threshold &&
                          static_cast<double>(hi) > opts_.balance_rel_threshold * static_cast<double>(lo);
  if (imbalanced || in.matches.empty() || in.prompt_blocks == 0) return least_.choose(in);
  // The longest hit (on the GPU first, then counting Grace), lighter load breaking ties.
  std::int32_t best = -1;
  for (std::size_t r = 0; r < in.loads.size(); ++r) {
    if (!in.loads[r].healthy) continue;
    if (best < 0) {
      best = static_cast<std::int32_t>(r);
      continue;
    }
    const RankMatch& m = in.matches[r];
    const RankMatch& b = in.matches[static_cast<std::size_t>(best)];
    const auto key = [](const RankMatch& x) { return std::pair(x.gpu_blocks, x.grace_blocks); };
    if (key(m) > key(b) || (key(m) == key(b) && in.loads[r].requests() <
                                                     in.loads[static_cast<std::size_t>(best)].requests())) {
      best = static_cast<std::int32_t>(r);
    }
  }
  const double hit = static_cast<double>(in.matches[static_cast<std::size_t>(best)].grace_blocks) /
                     static_cast<double>(in.prompt_blocks);
  return hit >= opts_.cache_threshold ? best : least_.choose(in);
}

std::unique_ptr<RoutingPolicy> make_routing_policy(std::string_view name, CacheAwareOptions opts, LoadWeights weights) {
  if (weights.requests < 0 || weights.tokens_in_flight_per_1k < 0 || weights.free_kv_per_1k_blocks < 0) {
    throw std::invalid_argument("routing policy: load weights must not be negative");
  }
  if (!(opts.cache_threshold >= 0 && opts.cache_threshold <= 1) || opts.balance_abs_threshold < 0 ||
      !(opts.balance_rel_threshold >= 1)) {
    throw std::invalid_argument(
        "routing policy: cache_threshold must be in [0, 1], balance_abs_threshold >= 0 and balance_rel_threshold >= 1");
  }
  if (name == "round_robin") return std::make_unique<RoundRobinPolicy>();
  if (name == "least_load") return std::make_unique<LeastLoadPolicy>(weights);
  if (name == "cache_aware") return std::make_unique<CacheAwarePolicy>(opts, weights);
  if (name == "pooled") return std::make_unique<LeastLoadPolicy>(weights, "pooled");
  throw std::invalid_argument("unknown routing policy '" + std::string(name) +
                              "': expected round_robin, least_load, cache_aware or pooled");
}

}  // namespace nvl::engine
