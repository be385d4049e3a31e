#pragma once
// HBM a worker keeps out of the KV cache for a step's activations, the MoE all-to-all buffers, the
// logits and the runtime's own needs (context, captured graphs, communicator buffers): what
// SGLang's --mem-fraction-static leaves free. Sized from the model and the step's token budget.
#include <cstdint>

#include "engine/model/model_profile.h"

namespace nvl::engine {

struct ActivationReserve {
  std::uint64_t activations_bytes = 0;  // live hidden-state buffers of one step
  std::uint64_t moe_buffers_bytes = 0;  // dispatch/combine receive buffers and expert intermediates
  std::uint64_t logits_bytes = 0;
  std::uint64_t runtime_bytes = 0;      // CUDA context, graphs, communicators

  std::uint64_t total_bytes() const { return activations_bytes + moe_buffers_bytes + logits_bytes + runtime_bytes; }
};

// `token_budget`: tokens one step may hold; `sampled_tokens`: positions whose logits one step computes.
ActivationReserve estimate_activation_reserve(const ModelProfile& m, std::int64_t token_budget,
                                              std::int64_t sampled_tokens, std::int64_t tp);

}  // namespace nvl::engine
