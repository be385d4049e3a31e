#include "fakegpu/mla_module.h"

#include <variant>

namespace nvl::fakegpu {

std::optional<AttentionModule> find_mla_module(std::span<const hal::KernelDesc> kernels) {
  using namespace deepseek_v3;
  const hal::KernelDesc* fused_a = nullptr;
  const hal::KernelDesc* attention = nullptr;
  for (const hal::KernelDesc& k : kernels) {
    switch (k.kind) {
      case hal::KernelKind::gemm:
        if (const auto* g = std::get_if<hal::GemmShape>(&k.shape);
            g != nullptr && g->k == kHidden && g->n == kQLora + kLatent + kRope) {
          fused_a = &k;
        }
        break;
      case hal::KernelKind::attn_prefill:
      case hal::KernelKind::attn_decode:
        if (attention != nullptr) return std::nullopt;
        attention = &k;
        break;
      case hal::KernelKind::attn_prefill_sparse:
      case hal::KernelKind::indexer:
      case hal::KernelKind::moe_gemm:
      case hal::KernelKind::sampler:
        return std::nullopt;
      case hal::KernelKind::elementwise:
        break;
    }
  }
  if (fused_a == nullptr || attention == nullptr) return std::nullopt;
  const auto* a = std::get_if<hal::AttentionShape>(&attention->shape);
  if (a == nullptr || a->sparse_topk != 0 || a->seqs <= 0 || a->q_tokens <= 0) return std::nullopt;
  const auto seqs = static_cast<double>(a->seqs);
  if (attention->kind == hal::KernelKind::attn_decode) {
    // Weight-absorbed: one latent KV head of 512 + 64, values of 512.
    if (a->kv_heads != 1 || a->qk_head_dim != kLatent + kRope || a->v_head_dim != kLatent) return std::nullopt;
    return AttentionModule{ModulePhase::decode, fused_a->dtype, attention->dtype, a->heads,
                           static_cast<double>(a->q_tokens), static_cast<double>(a->kv_tokens) / seqs, 0};
  }
  if (a->kv_heads != a->heads || a->qk_head_dim != kQkNope + kRope || a->v_head_dim != kVHead) return std::nullopt;
  const double length = static_cast<double>(a->q_tokens) / seqs;
  return AttentionModule{ModulePhase::context, fused_a->dtype, a->kv_cache, a->heads, seqs, length,
                         static_cast<double>(a->kv_tokens) / seqs - length};
}

}  // namespace nvl::fakegpu
