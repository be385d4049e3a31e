#pragma once
// The kernels of one transformer layer (and of the model's head) for a rank's batch, with their
// FLOPs and HBM bytes: what the executor puts into a step graph. Shapes follow the model profile;
// MLA decode runs in the absorbed (MQA-over-latent) form as FlashMLA does, MLA prefill in the
// expanded (MHA) form, DSA attends to at most index_topk keys per query and scores every cached key
// with its indexer. A multiply-add counts two FLOPs.
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/exec/rank_batch.h"
#include "engine/hal/kernel.h"
#include "engine/model/model_profile.h"
#include "engine/model/weight_dtypes.h"

namespace nvl::engine {

class LayerKernels {
 public:
  // `tp` splits heads, dense FFN, shared expert and vocabulary; under EP each rank holds whole experts.
  LayerKernels(const ModelProfile& model, std::int64_t tp, const WeightDtypes& weights, hal::DType kv_dtype);

  // One layer's attention: norm, projections, indexer (DSA), attention core, output projection.
  // `shares_indexer`: a layer that reuses an earlier one's top-k runs no indexer kernels (IndexShare,
  // ModelProfile::index_share_layers).
  void attention(const RankBatch& batch, bool shares_indexer, std::vector<hal::KernelDesc>& out) const;
  // One dense layer's FFN over `tokens`.
  void dense_ffn(std::int64_t tokens, std::vector<hal::KernelDesc>& out) const;
  // One MoE layer's gate and shared expert over `tokens` (the routed part is separate): moe_gate then
  // shared_expert.
  void moe_gate_and_shared(std::int64_t tokens, std::vector<hal::KernelDesc>& out) const;
  void moe_gate(std::int64_t tokens, std::vector<hal::KernelDesc>& out) const;
  void shared_expert(std::int64_t tokens, std::vector<hal::KernelDesc>& out) const;
  // The MoE op of `tokens` fed as `feed` says, the experts split `tp` ways within and `ep` ways across.
  hal::FusedMoeShape fused_moe(std::int64_t tokens, std::int64_t tp, std::int64_t ep,
                               hal::MoeFeed feed = hal::MoeFeed::routed_here) const;
  // One MoE layer's routed experts on this rank: `expert_tokens` token-expert pairs over `experts_read`
  // experts (those with a token), whose weights are read; `fused`, the op they are. One fused kernel; or,
  // for single-batch overlap (whose combine sends each expert's outputs as the down GEMM finishes them),
  // its two grouped GEMMs apart: gate-up with the activation, then down.
  void routed_experts(std::int64_t expert_tokens, std::int64_t experts_read,
                      const std::optional<hal::FusedMoeShape>& fused, std::vector<hal::KernelDesc>& out) const;
  void routed_experts_gate_up(std::int64_t expert_tokens, std::int64_t experts_read,
                              std::vector<hal::KernelDesc>& out) const;
  void routed_experts_down(std::int64_t expert_tokens, std::int64_t experts_read,
                           std::vector<hal::KernelDesc>& out) const;
  // Attention DP + MoE TP: this GPU's 1/moe_tp of every routed expert (split along the intermediate
  // dimension) over all `pairs` token-expert pairs of the gathered tokens. Each pair's hidden state is
  // read and its partial output written whole; at a split over tens of GPUs that traffic is what
  // routed_experts' rows of whole experts would undercount.
  void routed_expert_slices(std::int64_t pairs, std::int64_t moe_tp, std::int64_t experts_read,
                            std::vector<hal::KernelDesc>& out) const;
  // Final norm, LM head over the sampled positions, and the sampler.
  void head(std::int64_t sampled_tokens, std::vector<hal::KernelDesc>& out) const;

  // Bytes each token sends to one expert in the MoE dispatch (hidden state in the dispatch dtype).
  std::uint64_t dispatch_bytes_per_token() const;
  std::uint64_t combine_bytes_per_token() const;
  const ModelProfile& model() const { return model_; }
  std::int64_t tp() const { return tp_; }

 private:
  void gemm(const char* name, hal::DType dt, std::int64_t tokens, std::int64_t in, std::int64_t out_dim,
            std::vector<hal::KernelDesc>& out) const;
  // `heads` GEMMs of [tokens x in] by [in x out_dim], one per head, priced as one [tokens x heads*in] GEMM
  // by its heads*in x out_dim weights.
  void batched_gemm(const char* name, hal::DType dt, std::int64_t heads, std::int64_t tokens, std::int64_t in,
                    std::int64_t out_dim, std::vector<hal::KernelDesc>& out) const;
  // `parts` of the routed experts' three weight matrices (gate, up, down) as one grouped GEMM whose
  // pairs read `in` and write `out_dim` activations each.
  void grouped_gemm(const char* name, std::int64_t parts, std::int64_t expert_tokens, std::int64_t experts_read,
                    std::int64_t in, std::int64_t out_dim, const std::optional<hal::FusedMoeShape>& fused,
                    std::vector<hal::KernelDesc>& out) const;
  // What the attention kernels need of a batch, summed over its spans in one pass.
  struct SpanSums {
    std::int64_t prefill_tokens = 0;
    std::int64_t prefill_context = 0;  // cached and new tokens of every chunk
    std::int64_t prefill_keys = 0;     // attended_keys summed
    std::int64_t sparse_read = 0;      // DSA prefill: keys read from HBM (at most the chunk's context)
    std::int64_t decode_tokens = 0;
    std::int64_t decode_context = 0;   // cached and new tokens of every sequence
    std::int64_t decode_keys = 0;      // attended_keys summed
    std::int64_t decode_kv = 0;        // MLA decode: cache entries read (DSA: at most top-k per sequence)
    std::int64_t scored = 0;           // DSA indexer: keys its queries score (every cached one)
    std::int64_t prefill_seqs = 0;
    std::int64_t prefill_max_context = 0;
    std::int64_t decode_seqs = 0;
    std::int64_t decode_max_context = 0;
    std::int64_t tokens() const { return prefill_tokens + decode_tokens; }
  };
  SpanSums sums_of(const RankBatch& batch) const;
  // The prefill (decode) spans' attention as one kernel over this rank's heads.
  // sparse_topk: the DSA top-k the kernel attends (0: dense).
  hal::AttentionShape prefill_shape(const SpanSums& s, std::int64_t kv_heads, std::int64_t qk_dim, std::int64_t v_dim,
                                    std::int64_t sparse_topk) const;
  hal::AttentionShape decode_shape(const SpanSums& s, std::int64_t kv_heads, std::int64_t qk_dim, std::int64_t v_dim,
                                   std::int64_t sparse_topk) const;
  void mla_attention(const SpanSums& s, bool shares_indexer, std::vector<hal::KernelDesc>& out) const;
  void gqa_attention(const SpanSums& s, std::vector<hal::KernelDesc>& out) const;
  void dsa_indexer(const SpanSums& s, std::vector<hal::KernelDesc>& out) const;
  // Keys each query of the span attends to, summed over its queries (causal; DSA caps each at top-k).
  std::int64_t attended_keys(const PrefillSpan& p) const;
  std::int64_t attended_keys(const DecodeSpan& d) const;

  const ModelProfile& model_;
  std::int64_t tp_;
  WeightDtypes weights_;
  hal::DType kv_dtype_;
  std::int64_t heads_;  // attention heads on this rank
};

}  // namespace nvl::engine
