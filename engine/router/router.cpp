#include "engine/router/router.h"

#include <algorithm>
#include <stdexcept>

namespace nvl::engine {

Router::Router(std::int32_t ranks, RouterConfig cfg)
    : cfg_(std::move(cfg)), index_(ranks), policy_(make_routing_policy(cfg_.policy, cfg_.cache_aware, cfg_.weights)) {
  if (cfg_.prefill_threshold_tokens < 0) {
    throw std::invalid_argument("router: prefill threshold must not be negative, got " +
                                std::to_string(cfg_.prefill_threshold_tokens));
  }
  if (cfg_.block_tokens < 1) throw std::invalid_argument("router: block size must be at least 1 token");
}

std::optional<RouteDecision> Router::route(std::span<const BlockHash> hashes, std::int64_t prompt_tokens,
                                           std::span<const RankLoad> loads) {
  if (loads.size() != static_cast<std::size_t>(index_.ranks())) {
    throw std::invalid_argument("router: one load per rank expected");
  }
  RouteDecision d;
  std::int64_t held_blocks = 0;
  if (policy_->uses_prefix_index()) {
    d.matches = index_.match(hashes, &held_blocks);
  } else {
    held_blocks = index_.best_match(hashes);
  }
  d.cached_tokens = std::min(prompt_tokens, held_blocks * cfg_.block_tokens);
  d.uncached_tokens = prompt_tokens - d.cached_tokens;
  d.path = prefill_worker_up() && d.uncached_tokens >= cfg_.prefill_threshold_tokens ? PrefillPath::prefill_worker
                                                                                     : PrefillPath::local;
  d.rank = policy_->choose(RouteInput{loads, d.matches, static_cast<std::int64_t>(hashes.size())});
  if (d.rank < 0) return std::nullopt;
  ++routed_[static_cast<std::size_t>(d.path)];
  return d;
}

}  // namespace nvl::engine
