#pragma once
// What one engine step's graph computes, carried with the graph to the device so that timelines can
// say which step a span was (a CUDA graph launch is named by NVTX ranges the same way). Devices do
// not price from it; a graph that is not a step leaves it empty (step < 0).
#include <cstdint>

namespace nvl::hal {

struct StepLabel {
  std::int64_t step = -1;              // the worker's step number; -1: not a step
  std::int32_t micro_batch = -1;       // two-batch overlap: 0 or 1; -1: one batch
  std::int32_t prefill_requests = 0;   // prefill chunks in the batch
  std::int32_t decode_requests = 0;    // sequences decoding
  std::int64_t prefill_tokens = 0;     // new prompt tokens computed
  std::int64_t decode_tokens = 0;      // decode tokens (1 + MTP drafts per sequence)
  std::int64_t context_tokens = 0;     // KV the attention reads: cached prefix and earlier chunks, decode context
  std::int64_t first_layer = 0;        // [first_layer, end_layer): the model layers the graph runs (a
  std::int64_t end_layer = 0;          //   pipeline stage or a layer group of a step sending KV as it goes)

  bool is_step() const { return step >= 0; }
  // "prefill", "decode", "mixed" (both) or "idle" (an empty batch joining its group's collectives).
  const char* kind() const {
    if (prefill_tokens > 0) return decode_tokens > 0 ? "mixed" : "prefill";
    return decode_tokens > 0 ? "decode" : "idle";
  }
};

}  // namespace nvl::hal
