#pragma once
// Remote prefix hits: when the rank a request is routed to lacks part of a prefix that another rank
// holds (on its GPU, or in its tray's Grace memory), the KV can be fetched (GPU peer-to-peer over
// NVLink, or a one-sided RDMA read from the peer's pinned memory, as PegaFlow does) instead of being
// recomputed. The choice is made from modelled costs: fetch when its time is below recomputing.
#include <cstdint>
#include <span>

#include "emu/rt/time.h"
#include "engine/router/prefix_index.h"

namespace nvl::engine {

// Planning figures (the deployment sets them; defaults from REFERENCE.md §1.1 and §1.3).
struct FetchCosts {
  double nvlink_bytes_per_s = 900e9 * 0.8;  // NVLink 5, 900 GB/s a direction, at the 80% planning figure
  double rdma_bytes_per_s = 100e9 * 0.9;    // one CX8 (800 Gb/s) at PegaFlow's ~361/400 achieved share
  rt::Duration fetch_overhead = rt::us(30); // posting, completion and bookkeeping of one fetch
  double recompute_tokens_per_s = 0;        // the rank's prefill rate; 0: never fetch (but see gpu_pool)
  // The GPUs' KV is one pool over NVLink: a prefix on any peer GPU is read, never recomputed.
  bool gpu_pool = false;
};

enum class PrefixSource : std::uint8_t { none, peer_gpu, peer_grace };

struct FetchDecision {
  PrefixSource source = PrefixSource::none;  // none: recompute (or nothing to gain)
  std::int32_t from_rank = -1;
  std::int64_t blocks = 0;                   // blocks beyond what the target rank holds
  rt::Duration fetch_time;
  rt::Duration recompute_time;
};

// `matches`: every rank's match for the prompt (PrefixIndex::match); `rank`: where the request goes.
FetchDecision plan_fetch(std::span<const RankMatch> matches, std::int32_t rank, std::int64_t block_tokens,
                         std::uint64_t kv_bytes_per_token, const FetchCosts& costs);

}  // namespace nvl::engine
