#pragma once
// What one rank computes in one step, as the cost model needs it: prefill chunks (with the context
// already cached before them) and decode sequences (with their context length).
#include <cstdint>
#include <vector>

namespace nvl::engine {

struct PrefillSpan {
  std::int64_t prior_tokens = 0;  // cached prefix plus earlier chunks
  std::int64_t new_tokens = 0;
  bool samples = false;           // the chunk ends the prompt, so its last position is sampled
};

struct DecodeSpan {
  std::int64_t context_tokens = 0;  // KV already in the cache
  std::int64_t new_tokens = 1;      // 1 + MTP drafts
};

struct RankBatch {
  std::vector<PrefillSpan> prefills;
  std::vector<DecodeSpan> decodes;

  std::int64_t tokens() const {
    std::int64_t n = 0;
    for (const auto& p : prefills) n += p.new_tokens;
    for (const auto& d : decodes) n += d.new_tokens;
    return n;
  }
  // Positions whose logits are computed: each finishing prefill and every decode token.
  std::int64_t sampled_tokens() const {
    std::int64_t n = 0;
    for (const auto& p : prefills) n += p.samples ? 1 : 0;
    for (const auto& d : decodes) n += d.new_tokens;
    return n;
  }
  bool empty() const { return prefills.empty() && decodes.empty(); }
};

}  // namespace nvl::engine
