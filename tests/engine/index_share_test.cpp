// IndexShare (GLM-5.2): layers that reuse an earlier layer's top-k run no indexer kernels, and the
// step graph keeps its repeated layer bodies.
#include <string>

#include <gtest/gtest.h>

#include "engine/exec/step_graph_builder.h"

namespace nvl::engine {
namespace index_share_test {

ModelProfile load(const std::string& name) { return load_model_profile(model_profile_path(name)); }

struct Sums {
  std::uint64_t flops = 0;
  std::uint64_t bytes = 0;
};

// FLOPs and bytes of the graph's kernels whose names start with `prefix`, every repeat counted.
Sums sums_of(const hal::Graph& g, const std::string& prefix, std::uint64_t times = 1) {
  Sums s;
  for (const auto& node : g.nodes()) {
    if (const auto* k = std::get_if<hal::KernelsNode>(&node)) {
      for (const auto& d : *k->kernels) {
        if (d.name.rfind(prefix, 0) != 0) continue;
        s.flops += times * d.flops;
        s.bytes += times * d.bytes;
      }
    }
    if (const auto* r = std::get_if<hal::RepeatNode>(&node)) {
      const Sums inner = sums_of(*r->body, prefix, times * r->times);
      s.flops += inner.flops;
      s.bytes += inner.bytes;
    }
  }
  return s;
}

// Eight sequences of 4,000 cached tokens, one new token each.
RankBatch decodes() {
  RankBatch b;
  for (int i = 0; i < 8; ++i) b.decodes.push_back(DecodeSpan{4'000, 1});
  return b;
}

// One rank holding every expert: no EP, no TP.
StepGraphOptions no_ep(const ModelProfile& m) {
  StepGraphOptions o;
  o.local_experts = m.n_routed_experts;
  return o;
}

hal::Graph decode_step(const ModelProfile& m, const LayerKernels& kernels) {
  const StepGraphBuilder builder(kernels, nullptr, no_ep(m));
  return builder.build(decodes(), std::vector<std::int64_t>{8});
}

TEST(IndexShare, ASharedLayerRunsNoIndexerKernels) {
  const ModelProfile m = load("glm-5.2");
  const LayerKernels lk(m, 1, WeightDtypes{}, hal::DType::fp8);
  std::vector<hal::KernelDesc> full, shared;
  lk.attention(decodes(), false, full);
  lk.attention(decodes(), true, shared);
  ASSERT_EQ(full.size(), shared.size() + 3) << "idx.q, idx.k and idx.score";
  for (const auto& k : shared) EXPECT_NE(k.name.rfind("idx.", 0), 0u) << k.name;
  const auto find = [](const std::vector<hal::KernelDesc>& ks, const char* name) {
    for (const auto& k : ks) {
      if (k.name == name) return k;
    }
    return hal::KernelDesc{};
  };
  EXPECT_EQ(find(shared, "attn.decode").flops, find(full, "attn.decode").flops) << "still top-k sparse attention";
}

TEST(IndexShare, ADecodeStepRunsTheIndexerIn21Of78Layers) {
  const ModelProfile glm5 = load("glm-5");
  const ModelProfile glm52 = load("glm-5.2");
  const LayerKernels k5(glm5, 1, WeightDtypes{}, hal::DType::fp8);
  const LayerKernels k52(glm52, 1, WeightDtypes{}, hal::DType::fp8);
  const Sums a = sums_of(decode_step(glm5, k5), "idx.");
  const Sums b = sums_of(decode_step(glm52, k52), "idx.");
  // One layer's indexer over 8 sequences of 4,001 keys (4,000 cached + the new one), 32 heads x 128:
  //   idx.q     2 x 8 x 2048 x 4096   = 134,217,728 FLOP; 2048 x 4096 FP8 weights + 8 x (2048 + 4096) x 2 B
  //             = 8,388,608 + 98,304 = 8,486,912 B
  //   idx.k     2 x 8 x 6144 x 128    =  12,582,912 FLOP; 786,432 + 8 x (6144 + 128) x 2 = 886,784 B
  //   idx.score 2 x 32,008 x 4096     = 262,209,536 FLOP; 32,008 keys x 132 B = 4,225,056 B
  //   in all 409,010,176 FLOP and 13,598,752 B a layer: GLM-5 x 78, GLM-5.2 x 21 (21/78 = 0.269).
  EXPECT_EQ(a.flops, 78ULL * 409'010'176ULL);
  EXPECT_EQ(a.bytes, 78ULL * 13'598'752ULL);
  EXPECT_EQ(b.flops, 21ULL * 409'010'176ULL);
  EXPECT_EQ(b.bytes, 21ULL * 13'598'752ULL);
  // Everything else is the same model.
  EXPECT_EQ(sums_of(decode_step(glm52, k52), "attn.").flops, sums_of(decode_step(glm5, k5), "attn.").flops);
}

TEST(IndexShare, LayersOfOneKindStayOneRepeat) {
  const ModelProfile m = load("glm-5.2");
  const LayerKernels lk(m, 1, WeightDtypes{}, hal::DType::fp8);
  const hal::Graph g = decode_step(m, lk);
  // Dense layers 0-2 all hold an indexer; of the 75 MoE layers 18 hold one and 57 share: three repeats.
  std::vector<std::size_t> times;
  for (const auto& node : g.nodes()) {
    if (const auto* r = std::get_if<hal::RepeatNode>(&node)) times.push_back(r->times);
  }
  EXPECT_EQ(times, (std::vector<std::size_t>{3, 18, 57}));

  // A prefill's layer group [4, 11) holds MoE layers 6 and 10 with an indexer and 4, 5, 7, 8, 9 without.
  const StepGraphBuilder builder(lk, nullptr, no_ep(m));
  RankBatch prefill;
  prefill.prefills.push_back(PrefillSpan{0, 1'000, true});
  const hal::Graph part = builder.build_layers(prefill, std::vector<std::int64_t>{1'000}, 4, 11, false);
  times.clear();
  for (const auto& node : part.nodes()) times.push_back(std::get<hal::RepeatNode>(node).times);
  EXPECT_EQ(times, (std::vector<std::size_t>{2, 5}));
  std::vector<hal::KernelDesc> one_layer;
  lk.attention(prefill, false, one_layer);
  std::uint64_t per_layer = 0;
  for (const auto& k : one_layer) per_layer += k.name == "idx.score" ? k.flops : 0;
  EXPECT_EQ(sums_of(part, "idx.score").flops, 2 * per_layer);
}

}  // namespace index_share_test
}  // namespace nvl::engine
