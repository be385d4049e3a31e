#pragma once
// The router: for each request, the path (a short uncached prompt is prefilled and decoded on one DP
// rank; a long one goes to the prefill worker and its KV then moves to a DP rank) and the DP rank,
// by the routing policy over the ranks' loads and the global prefix index fed by their KV events.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "engine/router/prefix_index.h"
#include "engine/router/routing_policy.h"

namespace nvl::engine {

struct RouterConfig {
  std::int64_t prefill_threshold_tokens = 2'048;  // uncached tokens from which the prefill worker takes a prompt
  std::int64_t block_tokens = 64;                 // the KV cache's block size: hashes are per block
  std::string policy = "cache_aware";
  CacheAwareOptions cache_aware;
  LoadWeights weights;
  bool prefill_worker = true;                     // false: every prompt is prefilled on its DP rank
};

enum class PrefillPath : std::uint8_t { local, prefill_worker };

struct RouteDecision {
  PrefillPath path = PrefillPath::local;
  std::int32_t rank = -1;            // the DP rank that decodes (and, on the local path, prefills)
  std::int64_t cached_tokens = 0;    // longest prefix held anywhere (GPU or Grace of any rank)
  std::int64_t uncached_tokens = 0;  // what must be computed: decides the path
  // Each rank's prefix match as the policy read it from the index (empty when the policy does not read
  // it): the caller's fetch plan needs the same, and walking a long prompt's blocks again costs.
  std::vector<RankMatch> matches;
};

class Router {
 public:
  Router(std::int32_t ranks, RouterConfig cfg);

  void on_kv_event(const KvEvent& e) { index_.apply(e); }
  // A restarted router has lost its in-memory index; it refills from new KV events.
  void restart() { index_.clear(); }
  // The prefill worker was declared dead (false) or is back (true): while it is down every prompt is
  // prefilled on its DP rank.
  void set_prefill_worker_up(bool up) { prefill_worker_up_ = up; }
  bool prefill_worker_up() const { return cfg_.prefill_worker && prefill_worker_up_; }
  // nullopt when no rank is healthy.
  std::optional<RouteDecision> route(std::span<const BlockHash> hashes, std::int64_t prompt_tokens,
                                     std::span<const RankLoad> loads);

  const RouterConfig& config() const { return cfg_; }
  const PrefixIndex& index() const { return index_; }
  std::uint64_t routed(PrefillPath p) const { return routed_[static_cast<std::size_t>(p)]; }

 private:
  RouterConfig cfg_;
  PrefixIndex index_;
  std::unique_ptr<RoutingPolicy> policy_;
  std::uint64_t routed_[2] = {0, 0};
  bool prefill_worker_up_ = true;
};

}  // namespace nvl::engine
