#pragma once
// The shape of a kernel's operation, beside its FLOPs and bytes: what a CUDA implementation of the
// interface needs to launch the real kernel, and what a table of measured timings is looked up by.
// Each kind of kernel that has one carries its own; norms, activations and the sampler carry none.
#include <cstdint>
#include <optional>
#include <variant>

#include "engine/hal/types.h"

namespace nvl::hal {

// A dense GEMM: [m x k] activations times [k x n] weights.
struct GemmShape {
  std::int64_t m = 0;  // tokens
  std::int64_t n = 0;  // output features
  std::int64_t k = 0;  // input features
};

// `batch` independent GEMMs of one shape (MLA's per-head projections into and out of the latent space).
struct BatchedGemmShape {
  std::int64_t batch = 0;  // heads
  std::int64_t m = 0;      // tokens
  std::int64_t n = 0;
  std::int64_t k = 0;
};

// How a MoE op's tokens reach the GPU that runs its experts: every GPU of the group holds them all and
// routes them itself (MoE TP, or EP without all-to-alls), or DeepEP dispatches each GPU its share, in
// low-latency mode (as SGLang runs decode batches) or normal mode (batches with prefill tokens).
enum class MoeFeed : std::uint8_t { routed_here, deepep_low_latency, deepep_normal };

// A MoE op as kernel libraries launch it and measured tables key it: `tokens` over the EP group, each
// picking its top-k experts, the GPU's experts computing its share (tokens x topk / ep expert rows when
// balanced). Routed here, every GPU holds all `tokens`; dispatched, they are the group's. Experts sharded
// `tp` ways within, `ep` ways across.
struct FusedMoeShape {
  std::int64_t tokens = 0;
  std::int64_t topk = 0;
  std::int64_t experts = 0;       // the model's routed experts
  std::int64_t expert_inter = 0;  // an expert's whole intermediate dimension
  std::int64_t tp = 1;
  std::int64_t ep = 1;
  MoeFeed feed = MoeFeed::routed_here;
};

// A grouped GEMM over the experts a GPU holds: `pairs` token-expert pairs spread over `experts_read`
// experts (those with a token), each expert [hidden x inter] per weight matrix; `matrices` of the
// expert's three (gate, up, down) run in this kernel.
struct GroupedGemmShape {
  std::int64_t pairs = 0;
  std::int64_t experts_read = 0;
  std::int64_t hidden = 0;
  std::int64_t inter = 0;  // this GPU's part of each expert's intermediate dimension
  std::int64_t matrices = 3;
  // The MoE op it is all of; none where it is one part of it (the overlapped gate-up and down halves).
  std::optional<FusedMoeShape> fused;
};

// Attention over a batch of sequences: `q_tokens` queries in all, attending to `kv_tokens` cached and
// new keys in all (`max_kv` the longest sequence's), `attended_keys` query-key pairs (causal; capped at
// the DSA top-k where sparse). Head dims are the query/key and value widths the kernel works in (MLA
// absorbed: the latent, read by every head as one KV head).
struct AttentionShape {
  std::int64_t seqs = 0;
  std::int64_t q_tokens = 0;
  std::int64_t kv_tokens = 0;
  std::int64_t max_kv = 0;
  std::int64_t attended_keys = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t qk_head_dim = 0;
  std::int64_t v_head_dim = 0;
  std::int64_t sparse_topk = 0;  // DSA: the keys a query attends at most, chosen by the indexer; 0: dense
  // The KV cache's dtype, which the kernel reads (dense MLA prefill: the latent it expands first).
  DType kv_cache = DType::bf16;
};

// A DSA lightning indexer: each of `q_tokens` queries scores its sequence's cached keys (`scored` pairs
// in all, over `kv_tokens` keys read) with `heads` heads of `head_dim`, and keeps the top `topk`.
struct IndexerShape {
  std::int64_t seqs = 0;
  std::int64_t q_tokens = 0;
  std::int64_t kv_tokens = 0;
  std::int64_t scored = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t topk = 0;
};

using KernelShape =
    std::variant<std::monostate, GemmShape, BatchedGemmShape, GroupedGemmShape, AttentionShape, IndexerShape>;

}  // namespace nvl::hal
