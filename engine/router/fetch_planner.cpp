#include "engine/router/fetch_planner.h"

namespace nvl::engine {

FetchDecision plan_fetch(std::span<const RankMatch> matches, std::int32_t rank, std::int64_t block_tokens,
                         std::uint64_t kv_bytes_per_token, const FetchCosts& costs) {
  FetchDecision d;
  const std::int64_t mine = matches[static_cast<std::size_t>(rank)].grace_blocks;
  // The peer that holds the most beyond what this rank has; at equal length a GPU beats Grace.
  std::int64_t best = mine;
  const auto consider = [&](std::int64_t blocks, PrefixSource source, std::size_t r) {
    const bool longer = blocks > best;
    const bool better_place = blocks == best && blocks > mine && source == PrefixSource::peer_gpu &&
                              d.source == PrefixSource::peer_grace;
    if (!longer && !better_place) return;
    best = blocks;
    d.source = source;
    d.from_rank = static_cast<std::int32_t>(r);
  };
  for (std::size_t r = 0; r < matches.size(); ++r) {
    if (static_cast<std::int32_t>(r) == rank) continue;
    consider(matches[r].gpu_blocks, PrefixSource::peer_gpu, r);
    consider(matches[r].grace_blocks, PrefixSource::peer_grace, r);
  }
  d.blocks = best - mine;
  const bool pooled = costs.gpu_pool && d.source == PrefixSource::peer_gpu;
  if (d.blocks <= 0 || (costs.recompute_tokens_per_s <= 0 && !pooled)) return FetchDecision{};
  const double tokens = static_cast<double>(d.blocks * block_tokens);
  const double bytes = tokens * static_cast<double>(kv_bytes_per_token);
  const double rate = d.source == PrefixSource::peer_gpu ? costs.nvlink_bytes_per_s : costs.rdma_bytes_per_s;
  d.fetch_time = costs.fetch_overhead + rt::from_seconds(bytes / rate);
  if (costs.recompute_tokens_per_s > 0) d.recompute_time = rt::from_seconds(tokens / costs.recompute_tokens_per_s);
  if (!pooled && d.fetch_time >= d.recompute_time) d.source = PrefixSource::none;
  return d;
}

}  // namespace nvl::engine
