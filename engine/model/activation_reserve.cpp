#include "engine/model/activation_reserve.h"

namespace nvl::engine {

namespace {
// Estimates (not in REFERENCE.md): about eight hidden-sized BF16 buffers are live at once in a layer
// (residual, normed input, projections, attention output, MoE input and output); the CUDA context,
// captured graphs and NCCL/DeepEP communicators take about 3 GB, as commonly observed on H100/B200.
constexpr std::uint64_t kLiveHiddenBuffers = 8;
constexpr std::uint64_t kRuntimeBytes = 3'000'000'000ULL;
constexpr std::uint64_t kBf16 = 2;
constexpr std::uint64_t kFp32 = 4;
}  // namespace

ActivationReserve estimate_activation_reserve(const ModelProfile& m, std::int64_t token_budget,
                                              std::int64_t sampled_tokens, std::int64_t tp) {
  const auto tokens = static_cast<std::uint64_t>(token_budget);
  const auto hidden = static_cast<std::uint64_t>(m.hidden_size);
  const auto top_k = static_cast<std::uint64_t>(m.num_experts_per_tok);
  ActivationReserve r;
  r.activations_bytes = tokens * hidden * kBf16 * kLiveHiddenBuffers;
  // Receive buffers for every token copy in the dispatch and the combine, and the experts' gate/up output.
  r.moe_buffers_bytes = tokens * top_k * (2 * hidden + 2 * static_cast<std::uint64_t>(m.moe_intermediate_size)) * kBf16;
  r.logits_bytes = static_cast<std::uint64_t>(sampled_tokens) * static_cast<std::uint64_t>(m.vocab_size / tp) * kFp32;
  r.runtime_bytes = kRuntimeBytes;
  return r;
}

}  // namespace nvl::engine
