#pragma once
// A request as the engine's tests make them: `prompt` tokens, at most `output` out, its prompt's 64-token
// blocks hashed chain * 1,000,000 + block (distinct chains share no prefix), or from `id` when no chain is named.
#include <cstdint>

#include "engine/sched/request_state.h"

namespace nvl::engine::test {

inline RequestState request(RequestId id, std::int64_t prompt, std::int64_t output, BlockHash chain) {
  RequestState r;
  r.id = id;
  r.prompt_tokens = prompt;
  r.max_output_tokens = output;
  for (std::int64_t b = 0; b < prompt / 64; ++b) r.prompt_hashes.push_back(chain * 1'000'000 + static_cast<BlockHash>(b));
  return r;
}

inline RequestState request(RequestId id, std::int64_t prompt, std::int64_t output) {
  return request(id, prompt, output, static_cast<BlockHash>(id));
}

}  // namespace nvl::engine::test
