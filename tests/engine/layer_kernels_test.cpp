#include <cmath>

#include <gtest/gtest.h>

#include "engine/exec/layer_kernels.h"

namespace nvl::engine {
namespace layer_kernels_test {

using hal::KernelDesc;
using hal::KernelKind;

ModelProfile load(const std::string& name) { return load_model_profile(model_profile_path(name)); }

const KernelDesc* find(const std::vector<KernelDesc>& ks, const std::string& name) {
  for (const auto& k : ks) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::uint64_t flops_of_kinds(const std::vector<KernelDesc>& ks, std::initializer_list<KernelKind> kinds) {
  std::uint64_t f = 0;
  for (const auto& k : ks) {
    for (KernelKind kind : kinds) f += k.kind == kind ? k.flops : 0;
  }
  return f;
}

// A forward pass costs about 2 FLOPs per active parameter per token in its matrix products.
TEST(LayerKernels, MatmulFlopsOfAWholeForwardAreTwicePerActiveParameter) {
  for (const char* name : {"deepseek-v3", "deepseek-r1", "kimi-k2.5", "glm-5", "glm-5.2", "glm-4.5"}) {
    const ModelProfile m = load(name);
    const LayerKernels lk(m, 1, WeightDtypes{}, hal::DType::fp8);
    constexpr std::int64_t n = 1000;
    RankBatch batch;
    batch.prefills.push_back(PrefillSpan{0, n, true});
    std::vector<KernelDesc> ks;
    for (std::int64_t l = 0; l < m.num_hidden_layers; ++l) {
      lk.attention(batch, m.index_share_layers(l, l + 1) > 0, ks);
      if (l < m.first_k_dense_replace) {
        lk.dense_ffn(n, ks);
      } else {
        lk.moe_gate_and_shared(n, ks);
        lk.routed_experts(n * m.num_experts_per_tok, m.n_routed_experts, std::nullopt, ks);
      }
    }
    lk.head(batch.sampled_tokens(), ks);
    const double got = static_cast<double>(flops_of_kinds(ks, {KernelKind::gemm, KernelKind::moe_gemm}));
    const double lm_head = static_cast<double>(m.lm_head_params());
    const double want = 2.0 * n * (static_cast<double>(m.active_params()) - lm_head) + 2.0 * 1 * lm_head;
    // The indexer's per-head weight projection and the norms are left out of the kernels: 2%.
    EXPECT_NEAR(got / want, 1.0, 0.02) << name;
  }
}

// Every kernel that is an operation of a known shape carries it, and the shape accounts for its FLOPs:
// what a measured table is looked up by must be the work the roofline prices.
TEST(LayerKernels, ShapesCarryTheWorkTheirFlopsCount) {
  for (const char* name : {"deepseek-v3", "glm-5", "glm-4.5"}) {
    const ModelProfile m = load(name);
    const LayerKernels lk(m, 2, WeightDtypes{}, hal::DType::fp8);
    RankBatch batch;
    batch.prefills.push_back(PrefillSpan{300, 700, true});
    batch.prefills.push_back(PrefillSpan{0, 50, true});
    batch.decodes = {DecodeSpan{4'000, 1}, DecodeSpan{9'000, 1}, DecodeSpan{100, 1}};
    std::vector<KernelDesc> ks;
    lk.attention(batch, false, ks);
    lk.moe_gate_and_shared(batch.tokens(), ks);
    lk.routed_experts(batch.tokens() * 8, 12, std::nullopt, ks);
    lk.routed_experts_gate_up(batch.tokens() * 8, 12, ks);
    lk.routed_experts_down(batch.tokens() * 8, 12, ks);
    lk.routed_expert_slices(batch.tokens() * 8, 4, 12, ks);
    lk.head(batch.sampled_tokens(), ks);
    int attention = 0;
    for (const KernelDesc& k : ks) {
      const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
      if (const auto* g = std::get_if<hal::GemmShape>(&k.shape)) {
        EXPECT_EQ(k.flops, 2 * u(g->m) * u(g->n) * u(g->k)) << name << " " << k.name;
      } else if (const auto* b = std::get_if<hal::BatchedGemmShape>(&k.shape)) {
        EXPECT_EQ(b->batch, m.num_attention_heads / 2) << k.name;
        EXPECT_EQ(k.flops, 2 * u(b->batch) * u(b->m) * u(b->n) * u(b->k)) << name << " " << k.name;
      } else if (const auto* e = std::get_if<hal::GroupedGemmShape>(&k.shape)) {
        EXPECT_EQ(k.flops, 2 * u(e->matrices) * u(e->pairs) * u(e->hidden) * u(e->inter)) << name << " " << k.name;
        EXPECT_EQ(e->experts_read, 12);
      } else if (const auto* a = std::get_if<hal::AttentionShape>(&k.shape)) {
        ++attention;
        const bool prefill = k.kind != KernelKind::attn_decode;
        EXPECT_EQ(a->seqs, prefill ? 2 : 3) << k.name;
        EXPECT_EQ(a->q_tokens, prefill ? 750 : 3) << k.name;
        EXPECT_EQ(a->kv_tokens, prefill ? 1'050 : 13'103) << k.name;
        EXPECT_EQ(a->max_kv, prefill ? 1'000 : 9'001) << k.name;
        EXPECT_EQ(a->heads, m.num_attention_heads / 2);
        // QK^T and PV over every attended key of every head (MLA absorbed: the latent's two widths).
        EXPECT_EQ(k.flops, 2 * u(a->attended_keys) * u(a->heads) * u(a->qk_head_dim + a->v_head_dim)) << name << " " << k.name;
      } else if (const auto* x = std::get_if<hal::IndexerShape>(&k.shape)) {
        EXPECT_EQ(x->seqs, 5);
        EXPECT_EQ(x->topk, m.index_topk);
        EXPECT_EQ(k.flops, 2 * u(x->scored) * u(x->heads * x->head_dim)) << name;
      } else {
        EXPECT_TRUE(k.kind == KernelKind::elementwise || k.kind == KernelKind::sampler) << name << " " << k.name;
      }
    }
    EXPECT_EQ(attention, 2) << name << ": one prefill and one decode attention kernel";
  }
}

TEST(LayerKernels, DecodeReadsEachSequencesKvOnce) {
  const ModelProfile m = load("deepseek-v3");
  const LayerKernels lk(m, 1, WeightDtypes{}, hal::DType::fp8);
  RankBatch batch;
  batch.decodes.push_back(DecodeSpan{2000, 1});
  batch.decodes.push_back(DecodeSpan{500, 1});
  std::vector<KernelDesc> ks;
  lk.attention(batch, false, ks);
  const KernelDesc* core = find(ks, "attn.decode");
  ASSERT_NE(core, nullptr);
  // 576 FP8 bytes of latent per cached token (REFERENCE.md §2: 35,136 B / 61 layers), plus the new token.
  const std::uint64_t kv = (2001 + 501) * 576ULL;
  EXPECT_GE(core->bytes, kv);
  EXPECT_LE(core->bytes, kv + 2 * 128 * 576 * 2);  // + the two queries' activations
  // Scores and values: 2 FLOPs x keys x heads x (576 + 512) in the absorbed form.
  EXPECT_EQ(core->flops, 2ULL * (2001 + 501) * 128 * (576 + 512));
}

TEST(LayerKernels, SparseAttentionIsCappedAtTopKButTheIndexerIsNot) {
  const ModelProfile m = load("glm-5");
  const LayerKernels lk(m, 1, WeightDtypes{}, hal::DType::fp8);
  const auto kernels_at = [&](std::int64_t context) {
    RankBatch batch;
    batch.decodes.push_back(DecodeSpan{context, 1});
    std::vector<KernelDesc> ks;
    lk.attention(batch, false, ks);
    return ks;
  };
  const auto a = kernels_at(10'000);
  const auto b = kernels_at(100'000);
  EXPECT_EQ(find(a, "attn.decode")->flops, find(b, "attn.decode")->flops);
  EXPECT_EQ(find(a, "attn.decode")->flops, 2ULL * 2048 * 64 * (576 + 512));
  EXPECT_NEAR(static_cast<double>(find(b, "idx.score")->flops) / static_cast<double>(find(a, "idx.score")->flops),
              100'001.0 / 10'001.0, 1e-6);
}

TEST(LayerKernels, SparsePrefillReadsEachCachedKeyAtMostOncePerChunk) {
  // A 4,096-token chunk over 60,000 cached tokens under TP8: its queries pick top-2,048 keys from the
  // same sequence, so HBM reads that sequence's latent once (not 2,048 keys for every query).
  const ModelProfile m = load("glm-5");
  const LayerKernels lk(m, 8, WeightDtypes{}, hal::DType::fp8);
  RankBatch batch;
  batch.prefills.push_back(PrefillSpan{60'000, 4'096, true});
  std::vector<KernelDesc> ks;
  lk.attention(batch, false, ks);
  const KernelDesc* core = find(ks, "attn.sparse");
  ASSERT_NE(core, nullptr);
  const std::uint64_t latent = 64'096ULL * 576;  // FP8 latent of every key of the sequence
  const std::uint64_t queries = 4'096ULL * (64 / 8) * 576 * 2;  // the chunk's queries, BF16, 8 heads per rank
  EXPECT_EQ(core->bytes, latent + queries);
  // Compute still counts every query's 2,048 keys.
  EXPECT_EQ(core->flops, 2ULL * 4'096 * 2'048 * (64 / 8) * (576 + 512));
  // A short first chunk attends fewer keys than the sequence holds: what it attends bounds the reads.
  RankBatch first;
  first.prefills.push_back(PrefillSpan{0, 4, true});
  ks.clear();
  lk.attention(first, false, ks);
  EXPECT_EQ(find(ks, "attn.sparse")->bytes, 4ULL * 576 + 4ULL * (64 / 8) * 576 * 2);
}

TEST(LayerKernels, CausalPrefillCountsATriangleOfKeys) {
  const ModelProfile m = load("deepseek-v3");
  const LayerKernels lk(m, 8, WeightDtypes{}, hal::DType::fp8);
  RankBatch batch;
  batch.prefills.push_back(PrefillSpan{0, 4, true});  // 1 + 2 + 3 + 4 = 10 query-key pairs
  batch.prefills.push_back(PrefillSpan{6, 2, true});  // 7 + 8 = 15
  std::vector<KernelDesc> ks;
  lk.attention(batch, false, ks);
  const KernelDesc* core = find(ks, "attn.prefill");
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->flops, 2ULL * 25 * (128 / 8) * (192 + 128));
  EXPECT_THROW(LayerKernels(m, 3, WeightDtypes{}, hal::DType::fp8), std::invalid_argument);
}

TEST(LayerKernels, MoeTpSlicesReadEveryPairsHiddenStateWhole) {
  // GLM-5 (hidden 6,144, 256 experts of intermediate 2,048, FP8) at DP32 x MoE TP32, 2,048 tokens
  // gathered: 16,384 token-expert pairs through 1/32 of every expert, all 256 chosen (intermediate 64). By hand:
  // FLOPs 6 x 16,384 x 6,144 x 64 = 38.7 G; weights 256 x 3 x 6,144 x 64 x 1 B = 302 MB; activations
  // 16,384 x (2 x 6,144 + 3 x 64) x 2 B = 409 MB: the hidden states, not the weights, dominate.
  const ModelProfile m = load("glm-5");
  const LayerKernels lk(m, 1, WeightDtypes{}, hal::DType::fp8);
  std::vector<KernelDesc> ks;
  lk.routed_expert_slices(16'384, 32, 256, ks);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kind, KernelKind::moe_gemm);
  EXPECT_NEAR(static_cast<double>(ks[0].flops) / 1e9, 38.7, 0.1);
  EXPECT_NEAR(static_cast<double>(ks[0].bytes) / 1e6, 302.0 + 409.0, 2.0);
}

TEST(LayerKernels, EmptyBatchLaunchesNoAttention) {
  const ModelProfile m = load("glm-5");
  const LayerKernels lk(m, 1, WeightDtypes{}, hal::DType::fp8);
  std::vector<KernelDesc> ks;
  lk.attention(RankBatch{}, false, ks);
  lk.head(0, ks);
  EXPECT_TRUE(ks.empty());
}

}  // namespace layer_kernels_test
}  // namespace nvl::engine
