#include "engine/exec/two_batch_split.h"

#include <algorithm>

namespace nvl::engine {

std::array<RankBatch, 2> split_two_batches(const RankBatch& batch) {
  std::array<RankBatch, 2> out;
  const std::int64_t half = (batch.tokens() + 1) / 2;
  std::int64_t first = 0;  // tokens placed in the first micro-batch
  for (const PrefillSpan& p : batch.prefills) {
    const std::int64_t take = std::min(p.new_tokens, half - first);
    if (take <= 0) {
      out[1].prefills.push_back(p);
      continue;
    }
    if (take == p.new_tokens) {
      out[0].prefills.push_back(p);
    } else {
      out[0].prefills.push_back(PrefillSpan{p.prior_tokens, take, false});
      out[1].prefills.push_back(PrefillSpan{p.prior_tokens + take, p.new_tokens - take, p.samples});
    }
    first += take;
  }
  for (const DecodeSpan& d : batch.decodes) {
    const bool fits = first + d.new_tokens <= half;
    out[fits ? 0 : 1].decodes.push_back(d);
    if (fits) first += d.new_tokens;
  }
  return out;
}

}  // namespace nvl::engine
