#pragma once
// One step of one rank: the prefill chunks and decode tokens it runs together.
#include <cstdint>
#include <vector>

#include "engine/kv/kv_cache_manager.h"

namespace nvl::engine {

struct RequestState;

struct StepItem {
  RequestId id = 0;
  std::int64_t context_tokens = 0;  // tokens already in the KV cache that this item attends to
  std::int64_t new_tokens = 0;      // tokens computed this step (a prefill chunk, or 1 + drafts for decode)
  bool decode = false;
  bool last_chunk = false;          // a prefill chunk that completes the prompt (it yields the first token)
  RequestState* state = nullptr;    // the scheduler's own: valid until the step completes
};

struct StepPlan {
  std::vector<StepItem> items;
  std::int64_t prefill_tokens = 0;
  std::int64_t decode_tokens = 0;
  std::vector<RequestId> preempted;  // requests whose KV was dropped to make room this step
  std::vector<RequestId> rejected;   // requests whose prompt and output can never fit this rank's KV: dropped

  bool empty() const { return items.empty(); }
  std::int64_t tokens() const { return prefill_tokens + decode_tokens; }
};

}  // namespace nvl::engine
