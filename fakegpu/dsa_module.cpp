#include "fakegpu/dsa_module.h"

#include <variant>

namespace nvl::fakegpu {

std::optional<AttentionModule> find_dsa_module(std::span<const hal::KernelDesc> kernels) {
  const hal::KernelDesc* fused_a = nullptr;
  const hal::KernelDesc* attention = nullptr;
  int indexers = 0;
  for (const hal::KernelDesc& k : kernels) {
    switch (k.kind) {
      case hal::KernelKind::gemm:
        if (const auto* g = std::get_if<hal::GemmShape>(&k.shape);
            g != nullptr && g->k == glm5::kHidden && g->n == glm5::kQLora + glm5::kLatent + glm5::kRope) {
          fused_a = &k;
        }
        break;
      case hal::KernelKind::indexer:
        if (const auto* i = std::get_if<hal::IndexerShape>(&k.shape);
            i == nullptr || i->head_dim != glm5::kIndexHeadDim || i->topk != glm5::kIndexTopk) {
          return std::nullopt;
        }
        ++indexers;
        break;
      case hal::KernelKind::attn_decode:
      case hal::KernelKind::attn_prefill_sparse:
        if (attention != nullptr) return std::nullopt;
        attention = &k;
        break;
      case hal::KernelKind::attn_prefill:
      case hal::KernelKind::moe_gemm:
      case hal::KernelKind::sampler:
        return std::nullopt;
      case hal::KernelKind::elementwise:
        break;
    }
  }
  if (fused_a == nullptr || attention == nullptr || indexers != 1) return std::nullopt;
  const auto* a = std::get_if<hal::AttentionShape>(&attention->shape);
  if (a == nullptr || a->sparse_topk != glm5::kIndexTopk || a->kv_heads != 1 || a->seqs <= 0 || a->q_tokens <= 0 ||
      a->qk_head_dim != glm5::kLatent + glm5::kRope || a->v_head_dim != glm5::kLatent) {
    return std::nullopt;
  }
  const auto seqs = static_cast<double>(a->seqs);
  const auto queries = static_cast<double>(a->q_tokens);
  const auto context = static_cast<double>(a->kv_tokens) / seqs;  // mean keys per sequence, new ones included
  if (attention->kind == hal::KernelKind::attn_decode) {
    return AttentionModule{ModulePhase::decode, fused_a->dtype, attention->dtype, a->heads, queries, context, 0};
  }
  return AttentionModule{ModulePhase::context, fused_a->dtype, attention->dtype, a->heads, seqs, queries / seqs,
                   context - queries / seqs};
}

}  // namespace nvl::fakegpu
