#include "engine/exec/layer_kernels.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nvl::engine {

namespace {

using hal::DType;
using hal::KernelDesc;
using hal::KernelKind;

constexpr std::int64_t kActivationBytes = 2;  // activations travel in BF16

std::uint64_t bytes_of(std::int64_t elements, DType d) {
  return static_cast<std::uint64_t>(elements) * static_cast<std::uint64_t>(hal::bits_of(d)) / 8;
}

std::uint64_t u64(std::int64_t v) { return static_cast<std::uint64_t>(v); }

// Sum over i = 1..n of min(start + i, cap): the keys each of n consecutive causal queries sees.
std::int64_t causal_keys(std::int64_t start, std::int64_t n, std::int64_t cap) {
  if (n <= 0) return 0;
  const auto tri = [](std::int64_t a, std::int64_t b) {  // sum of a+1 .. b
    return (b * (b + 1) - a * (a + 1)) / 2;
  };
  const std::int64_t first = start + 1;
  const std::int64_t last = start + n;
  if (last <= cap) return tri(start, last);
  if (first >= cap) return n * cap;
  return tri(start, cap) + (last - cap) * cap;
}

}  // namespace

hal::AttentionShape LayerKernels::prefill_shape(const SpanSums& s, std::int64_t kv_heads, std::int64_t qk_dim,
                                                std::int64_t v_dim, std::int64_t sparse_topk) const {
  return hal::AttentionShape{s.prefill_seqs, s.prefill_tokens, s.prefill_context, s.prefill_max_context,
                             s.prefill_keys, heads_, kv_heads, qk_dim, v_dim, sparse_topk, kv_dtype_};
}

hal::AttentionShape LayerKernels::decode_shape(const SpanSums& s, std::int64_t kv_heads, std::int64_t qk_dim,
                                               std::int64_t v_dim, std::int64_t sparse_topk) const {
  return hal::AttentionShape{s.decode_seqs, s.decode_tokens, s.decode_context, s.decode_max_context,
                             s.decode_keys, heads_, kv_heads, qk_dim, v_dim, sparse_topk, kv_dtype_};
}

LayerKernels::LayerKernels(const ModelProfile& model, std::int64_t tp, const WeightDtypes& weights, DType kv_dtype)
    : model_(model), tp_(tp), weights_(weights), kv_dtype_(kv_dtype), heads_(model.num_attention_heads / tp) {
  if (tp < 1 || model.num_attention_heads % tp != 0) {
    throw std::invalid_argument(model.name + ": tp " + std::to_string(tp) + " must divide the attention heads");
  }
}

void LayerKernels::gemm(const char* name, DType dt, std::int64_t tokens, std::int64_t in, std::int64_t out_dim,
                        std::vector<KernelDesc>& out) const {
  if (tokens <= 0) return;
  out.push_back(KernelDesc{KernelKind::gemm, dt, 2 * u64(tokens) * u64(in) * u64(out_dim),
                           weight_bytes(in * out_dim, dt) + u64(tokens * (in + out_dim) * kActivationBytes), name,
                           hal::GemmShape{tokens, out_dim, in}});
}

void LayerKernels::batched_gemm(const char* name, DType dt, std::int64_t heads, std::int64_t tokens, std::int64_t in,
                                std::int64_t out_dim, std::vector<KernelDesc>& out) const {
  if (tokens <= 0) return;
  gemm(name, dt, tokens, heads * in, out_dim, out);
  out.back().shape = hal::BatchedGemmShape{heads, tokens, out_dim, in};
}

std::int64_t LayerKernels::attended_keys(const PrefillSpan& p) const {
  const std::int64_t cap = model_.attention == AttentionKind::mla_dsa ? model_.index_topk : INT64_MAX / 4;
  return causal_keys(p.prior_tokens, p.new_tokens, cap);
}

std::int64_t LayerKernels::attended_keys(const DecodeSpan& d) const {
  const std::int64_t cap = model_.attention == AttentionKind::mla_dsa ? model_.index_topk : INT64_MAX / 4;
  return causal_keys(d.context_tokens, d.new_tokens, cap);
}

LayerKernels::SpanSums LayerKernels::sums_of(const RankBatch& batch) const {
  const bool dsa = model_.attention == AttentionKind::mla_dsa;
  SpanSums s;
  for (const PrefillSpan& p : batch.prefills) {
    const std::int64_t context = p.prior_tokens + p.new_tokens;
    const std::int64_t keys = attended_keys(p);
    s.prefill_tokens += p.new_tokens;
    s.prefill_context += context;
    ++s.prefill_seqs;
    s.prefill_max_context = std::max(s.prefill_max_context, context);
    s.prefill_keys += keys;
    // A chunk's queries pick their top-k from the same sequence's keys, which stay on chip across the
    // queries: HBM reads each key at most once per step, as the dense path and the indexer assume.
    s.sparse_read += std::min(keys, context);
    if (dsa) s.scored += causal_keys(p.prior_tokens, p.new_tokens, INT64_MAX / 4);
  }
  for (const DecodeSpan& d : batch.decodes) {
    const std::int64_t context = d.context_tokens + d.new_tokens;
    s.decode_tokens += d.new_tokens;
    s.decode_context += context;
    ++s.decode_seqs;
    s.decode_max_context = std::max(s.decode_max_context, context);
    s.decode_keys += attended_keys(d);
    // The cache is read once per sequence whatever the number of heads and MTP tokens.
    s.decode_kv += dsa ? std::min(context, model_.index_topk) : context;
    if (dsa) s.scored += causal_keys(d.context_tokens, d.new_tokens, INT64_MAX / 4);
  }
  return s;
}

void LayerKernels::attention(const RankBatch& batch, bool shares_indexer, std::vector<KernelDesc>& out) const {
  const SpanSums s = sums_of(batch);
  const std::int64_t n = s.tokens();
  if (n == 0) return;
  const std::int64_t h = model_.hidden_size;
  out.push_back(KernelDesc{KernelKind::elementwise, DType::bf16, u64(8 * n * h), u64(4 * n * h * kActivationBytes),
                           "attn.norm", {}});
  if (model_.is_mla()) {
    mla_attention(s, shares_indexer, out);
  } else {
    gqa_attention(s, out);
  }
}

void LayerKernels::mla_attention(const SpanSums& s, bool shares_indexer, std::vector<KernelDesc>& out) const {
  const ModelProfile& m = model_;
  const DType wd = weights_.attention;
  const std::int64_t n = s.tokens();
  const std::int64_t h = m.hidden_size;
  const std::int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  const std::int64_t latent = m.kv_lora_rank + m.qk_rope_head_dim;
  const bool dsa = m.attention == AttentionKind::mla_dsa;
  // q_a and kv_a read the same hidden state: SGLang (fused_qkv_a_proj_with_mqa), TensorRT-LLM (fused_a)
  // and vLLM (fused_qkv_a_proj) run them as one GEMM of q_lora + latent outputs.
  gemm("attn.qkv_a", wd, n, h, m.q_lora_rank + latent, out);
  gemm("attn.q_b", wd, n, m.q_lora_rank, heads_ * qk, out);
  // A layer that shares the indexer attends to the top-k an earlier layer picked.
  if (dsa && !shares_indexer) dsa_indexer(s, out);

  // Prefill: dense MLA expands the cached latent to per-head K and V (MHA form); DSA attends sparsely
  // over the latent in absorbed form, as decode does.
  std::int64_t absorbed_tokens = 0;
  if (s.prefill_tokens > 0 && !dsa) {
    gemm("attn.kv_b", wd, s.prefill_context, m.kv_lora_rank, heads_ * (m.qk_nope_head_dim + m.v_head_dim), out);
    out.push_back(KernelDesc{KernelKind::attn_prefill, DType::bf16,
                             2 * u64(s.prefill_keys) * u64(heads_) * u64(qk + m.v_head_dim),
                             u64(s.prefill_context * heads_ * (qk + m.v_head_dim) * kActivationBytes) +
                                 u64(s.prefill_tokens * heads_ * (qk + m.v_head_dim) * kActivationBytes),
                             "attn.prefill", prefill_shape(s, heads_, qk, m.v_head_dim, 0)});
  } else if (s.prefill_tokens > 0) {
    absorbed_tokens += s.prefill_tokens;
    out.push_back(KernelDesc{KernelKind::attn_prefill_sparse, kv_dtype_,
                             2 * u64(s.prefill_keys) * u64(heads_) * u64(latent + m.kv_lora_rank),
                             bytes_of(s.sparse_read * latent, kv_dtype_) +
                                 u64(s.prefill_tokens * heads_ * latent * kActivationBytes),
                             "attn.sparse", prefill_shape(s, 1, latent, m.kv_lora_rank, m.index_topk)});
  }
  if (s.decode_tokens > 0) {
    absorbed_tokens += s.decode_tokens;
    out.push_back(KernelDesc{KernelKind::attn_decode, kv_dtype_,
                             2 * u64(s.decode_keys) * u64(heads_) * u64(latent + m.kv_lora_rank),
                             bytes_of(s.decode_kv * latent, kv_dtype_) +
                                 u64(s.decode_tokens * heads_ * latent * kActivationBytes),
                             "attn.decode", decode_shape(s, 1, latent, m.kv_lora_rank, dsa ? m.index_topk : 0)});
  }
  if (absorbed_tokens > 0) {
    // Absorbed form: queries move into the latent space and outputs back out of it, per head.
    batched_gemm("attn.absorb_q", wd, heads_, absorbed_tokens, m.qk_nope_head_dim, m.kv_lora_rank, out);
    batched_gemm("attn.absorb_o", wd, heads_, absorbed_tokens, m.kv_lora_rank, m.v_head_dim, out);
  }
  gemm("attn.o", wd, n, heads_ * m.v_head_dim, h, out);
}

void LayerKernels::dsa_indexer(const SpanSums& s, std::vector<KernelDesc>& out) const {
  const ModelProfile& m = model_;
  const std::int64_t n = s.tokens();
  // Under TP the indexer's heads split like the attention heads (when they divide evenly).
  const std::int64_t idx_heads = m.index_n_heads % tp_ == 0 ? m.index_n_heads / tp_ : m.index_n_heads;
  gemm("idx.q", weights_.attention, n, m.q_lora_rank, idx_heads * m.index_head_dim, out);
  gemm("idx.k", weights_.attention, n, m.hidden_size, m.index_head_dim, out);
  // Every query scores every cached key of its sequence; the keys are read once per sequence.
  const std::int64_t keys_read = s.prefill_context + s.decode_context;
  out.push_back(KernelDesc{KernelKind::indexer, DType::fp8, 2 * u64(s.scored) * u64(idx_heads * m.index_head_dim),
                           u64(keys_read * (m.index_head_dim + m.index_key_scale_bytes)), "idx.score",
                           hal::IndexerShape{s.prefill_seqs + s.decode_seqs, n, keys_read, s.scored, idx_heads,
                                             m.index_head_dim, m.index_topk}});
}

void LayerKernels::gqa_attention(const SpanSums& s, std::vector<KernelDesc>& out) const {
  const ModelProfile& m = model_;
  const DType wd = weights_.attention;
  const std::int64_t n = s.tokens();
  const std::int64_t kv_heads = std::max<std::int64_t>(1, m.num_key_value_heads / tp_);
  const std::int64_t kv_per_token = 2 * kv_heads * m.head_dim;
  gemm("attn.q", wd, n, m.hidden_size, heads_ * m.head_dim, out);
  gemm("attn.kv", wd, n, m.hidden_size, kv_per_token, out);
  if (s.prefill_tokens > 0) {
    out.push_back(KernelDesc{KernelKind::attn_prefill, DType::bf16, 4 * u64(s.prefill_keys) * u64(heads_ * m.head_dim),
                             bytes_of(s.prefill_context * kv_per_token, kv_dtype_) +
                                 u64(s.prefill_tokens * heads_ * m.head_dim * 2 * kActivationBytes),
                             "attn.prefill", prefill_shape(s, kv_heads, m.head_dim, m.head_dim, 0)});
  }
  if (s.decode_tokens > 0) {
    out.push_back(KernelDesc{KernelKind::attn_decode, kv_dtype_, 4 * u64(s.decode_keys) * u64(heads_ * m.head_dim),
                             bytes_of(s.decode_context * kv_per_token, kv_dtype_) +
                                 u64(s.decode_tokens * heads_ * m.head_dim * 2 * kActivationBytes),
                             "attn.decode", decode_shape(s, kv_heads, m.head_dim, m.head_dim, 0)});
  }
  gemm("attn.o", wd, n, heads_ * m.head_dim, m.hidden_size, out);
}

void LayerKernels::dense_ffn(std::int64_t tokens, std::vector<KernelDesc>& out) const {
  if (tokens <= 0) return;
  const std::int64_t inter = model_.intermediate_size / tp_;
  gemm("ffn.up", weights_.dense, tokens, model_.hidden_size, 2 * inter, out);
  gemm("ffn.down", weights_.dense, tokens, inter, model_.hidden_size, out);
}

void LayerKernels::moe_gate_and_shared(std::int64_t tokens, std::vector<KernelDesc>& out) const {
  moe_gate(tokens, out);
  shared_expert(tokens, out);
}

void LayerKernels::moe_gate(std::int64_t tokens, std::vector<KernelDesc>& out) const {
  gemm("moe.gate", DType::bf16, tokens, model_.hidden_size, model_.n_routed_experts, out);
}

void LayerKernels::shared_expert(std::int64_t tokens, std::vector<KernelDesc>& out) const {
  const std::int64_t inter = model_.n_shared_experts * model_.moe_intermediate_size / tp_;
  if (inter == 0) return;
  gemm("moe.shared_up", weights_.shared_experts, tokens, model_.hidden_size, 2 * inter, out);
  gemm("moe.shared_down", weights_.shared_experts, tokens, inter, model_.hidden_size, out);
}

void LayerKernels::grouped_gemm(const char* name, std::int64_t parts, std::int64_t expert_tokens,
                                std::int64_t experts_read, std::int64_t in, std::int64_t out_dim,
                                const std::optional<hal::FusedMoeShape>& fused, std::vector<KernelDesc>& out) const {
  if (experts_read <= 0) return;
  const std::int64_t h = model_.hidden_size;
  const std::int64_t inter = model_.moe_intermediate_size;
  // The weights of every expert read (one with a token) are read once per step, however few tokens it
  // gets; an expert no token chose is skipped, as the grouped GEMM's empty groups are. The grouped GEMM
  // runs in the weights' dtype (FP4 weights: FP4 tensor cores on activations quantized to match).
  const DType dt = weights_.routed_experts;
  out.push_back(KernelDesc{KernelKind::moe_gemm, dt, 2 * u64(parts) * u64(expert_tokens) * u64(h) * u64(inter),
                           weight_bytes(experts_read * parts * h * inter, dt) +
                               u64(expert_tokens * (in + out_dim) * kActivationBytes),
                           name, hal::GroupedGemmShape{expert_tokens, experts_read, h, inter, parts, fused}});
}

hal::FusedMoeShape LayerKernels::fused_moe(std::int64_t tokens, std::int64_t tp, std::int64_t ep,
                                           hal::MoeFeed feed) const {
  return hal::FusedMoeShape{tokens, model_.num_experts_per_tok, model_.n_routed_experts, model_.moe_intermediate_size,
                            tp, ep, feed};
}

void LayerKernels::routed_experts(std::int64_t expert_tokens, std::int64_t experts_read,
                                  const std::optional<hal::FusedMoeShape>& fused, std::vector<KernelDesc>& out) const {
  // Reads the hidden state, writes gate and up, reads them, writes the intermediate, reads it, writes
  // the output: 2h + 3 intermediate activations a pair.
  const std::int64_t h = model_.hidden_size;
  grouped_gemm("moe.experts", 3, expert_tokens, experts_read, h, h + 3 * model_.moe_intermediate_size, fused, out);
}

void LayerKernels::routed_experts_gate_up(std::int64_t expert_tokens, std::int64_t experts_read,
                                          std::vector<KernelDesc>& out) const {
  // Reads the hidden state, writes the activated intermediate (gate and up fused with the activation).
  grouped_gemm("moe.experts_gate_up", 2, expert_tokens, experts_read, model_.hidden_size,
               2 * model_.moe_intermediate_size, std::nullopt, out);
}

void LayerKernels::routed_experts_down(std::int64_t expert_tokens, std::int64_t experts_read,
                                       std::vector<KernelDesc>& out) const {
  grouped_gemm("moe.experts_down", 1, expert_tokens, experts_read, model_.moe_intermediate_size,
               model_.hidden_size, std::nullopt, out);
}

void LayerKernels::routed_expert_slices(std::int64_t pairs, std::int64_t moe_tp, std::int64_t experts_read,
                                        std::vector<KernelDesc>& out) const {
  if (moe_tp < 1) throw std::invalid_argument(model_.name + ": MoE TP degree " + std::to_string(moe_tp) + " below 1");
  const std::int64_t h = model_.hidden_size;
  const std::int64_t inter = model_.moe_intermediate_size;
  const DType dt = weights_.routed_experts;
  // Divided last: the intermediate dimension need not split evenly (2,048 over 72 GPUs).
  out.push_back(KernelDesc{KernelKind::moe_gemm, dt, 6 * u64(pairs) * u64(h) * u64(inter) / u64(moe_tp),
                           weight_bytes(experts_read * 3 * h * inter / moe_tp, dt) +
                               u64(pairs * 2 * h * kActivationBytes) + u64(pairs * 3 * inter * kActivationBytes / moe_tp),
                           "moe.experts",
                           hal::GroupedGemmShape{pairs, experts_read, h, inter / moe_tp, 3,
                                                 fused_moe(pairs / model_.num_experts_per_tok, moe_tp, 1)}});
}

void LayerKernels::head(std::int64_t sampled_tokens, std::vector<KernelDesc>& out) const {
  if (sampled_tokens <= 0) return;
  const std::int64_t vocab = model_.vocab_size / tp_;
  gemm("lm_head", weights_.embedding, sampled_tokens, model_.hidden_size, vocab, out);
  out.push_back(KernelDesc{KernelKind::sampler, DType::fp32, 5 * u64(sampled_tokens) * u64(vocab),
                           4 * u64(sampled_tokens) * u64(vocab), "sampler", {}});
}

std::uint64_t LayerKernels::dispatch_bytes_per_token() const {
  // FP8 hidden state plus one FP32 scale per 128 values, as DeepEP's FP8 dispatch sends.
  return u64(model_.hidden_size) + u64(model_.hidden_size / 128 * 4);
}

std::uint64_t LayerKernels::combine_bytes_per_token() const { return u64(model_.hidden_size * kActivationBytes); }

}  // namespace nvl::engine
