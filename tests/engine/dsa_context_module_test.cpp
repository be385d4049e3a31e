// GLM-5's prefill attention, as the engine launches it, priced whole from the measured DSA prefill module
// table of its kernel library: the same kernel list with and without the table, against hand estimates.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "engine/exec/layer_kernels.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/dsa_module.h"
#include "fakegpu/profile_library.h"

namespace nvl::engine {
namespace {

using fakegpu::CostModel;
using fakegpu::KernelCost;

// B200 under SGLang with GLM-5 FP8 at TP8 (8 local heads), FP8 KV: the validate rows' deployment.
struct Glm5PrefillOnB200 {
  fakegpu::DeviceProfile profile = fakegpu::load_device_profile_named("b200");
  ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  LayerKernels kernels{model, 8, WeightDtypes{}, hal::DType::fp8};
  fakegpu::MeasuredKernels tables = fakegpu::MeasuredKernels::load(profile.measured_kernels.at("sglang"));

  std::vector<hal::KernelDesc> attention(const RankBatch& batch) const {
    std::vector<hal::KernelDesc> out;
    kernels.attention(batch, false, out);
    return out;
  }
  // The list's time without its input norm (which no module includes), with or without the prefill table.
  double block_ns(const std::vector<hal::KernelDesc>& ks, bool module_table) const {
    CostModel pricing(profile, 0);
    fakegpu::MeasuredKernels used = tables;
    if (!module_table) used.dsa_context = nullptr;
    pricing.use_measured_kernels(used);
    std::vector<KernelCost> costs;
    pricing.cost_list(ks, profile.graph_node, costs);
    double ns = 0;
    for (std::size_t i = 0; i < ks.size(); ++i) {
      if (ks[i].kind == hal::KernelKind::elementwise) continue;
      if (module_table) {
        EXPECT_TRUE(costs[i].measured) << ks[i].name;
      }
      ns += fakegpu::price_ns(costs[i], {});
    }
    return ns;
  }
  // The table's own row (microseconds) for FP8 GEMMs and KV, 8 heads.
  double table_us(std::int64_t batch, std::int64_t isl) const {
    std::ifstream in(fakegpu::default_profile_dir() / "measured/b200/dsa_context_sglang.csv");
    const std::string key = "fp8,fp8,8," + std::to_string(batch) + "," + std::to_string(isl) + ",";
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size()));
    }
    ADD_FAILURE() << "no row " << key;
    return 0;
  }
};

RankBatch prompts(int seqs, std::int64_t new_tokens, std::int64_t prior = 0) {
  RankBatch b;
  for (int i = 0; i < seqs; ++i) b.prefills.push_back(PrefillSpan{prior, new_tokens, true});
  return b;
}

TEST(DsaContextModule, TheEnginesPrefillAttentionIsFoundWithItsShape) {
  Glm5PrefillOnB200 rig;
  const auto block = fakegpu::find_dsa_module(rig.attention(prompts(2, 4096)));
  ASSERT_TRUE(block.has_value());
  EXPECT_EQ(block->phase, fakegpu::DsaPhase::context);
  EXPECT_EQ(block->gemm_dtype, hal::DType::fp8);
  EXPECT_EQ(block->kv_dtype, hal::DType::fp8);
  EXPECT_EQ(block->heads, 8);
  EXPECT_EQ(block->batch, 2);
  EXPECT_EQ(block->length, 4096);
  EXPECT_EQ(block->prefix, 0);
  // A chunk after 8,192 cached tokens.
  EXPECT_EQ(fakegpu::find_dsa_module(rig.attention(prompts(1, 8192, 8192)))->prefix, 8192);
  // Not one phase: a decode beside the chunk.
  RankBatch mixed = prompts(1, 4096);
  mixed.decodes.push_back(DecodeSpan{1024, 1});
  EXPECT_FALSE(fakegpu::find_dsa_module(rig.attention(mixed)).has_value());
}

TEST(DsaContextModule, TheBlockCostsWhatTheModuleTableSaysFarAboveItsKernelsSum) {
  Glm5PrefillOnB200 rig;
  // One 8,192-token prompt: the table's 2,346 us.
  const auto ks = rig.attention(prompts(1, 8192));
  const double with_module = rig.block_ns(ks, true);
  EXPECT_NEAR(with_module, rig.table_us(1, 8192) * 1e3, 1e-3);
  // Kernel by kernel: the five projection GEMMs from SGLang's GEMM table at m 8,192 (fused q_a/kv_a 264
  // GFLOP at about half the 4.5 PFLOP/s FP8 peak, 117 us; q_b 69 GFLOP, the indexer's q 17 and k 13 (n
  // 128, poorly used: 47 us), o 206: some 330 us), then the roofline's absorbed BMMs (26 GFLOP), the
  // indexer scoring 33.6 M query-key pairs over 4 heads (34 GFLOP FP8) and the sparse attention over
  // 14.7 M pairs (256 GFLOP), some 120 us at their efficiencies: about 450 us. The module, measured whole
  // in eager mode, is about 5x that: its short prompts (800 us at 4 tokens, the dense path) show a floor
  // no kernel's work explains, the host launching the block's ~30 operations one by one, which a prefill
  // (not captured in a CUDA graph) pays too.
  const double kernel_by_kernel = rig.block_ns(ks, false);
  EXPECT_GT(kernel_by_kernel, 380e3);
  EXPECT_LT(kernel_by_kernel, 520e3);
  EXPECT_GT(with_module / kernel_by_kernel, 4);
  // Two prompts of 4,096: the table's own row, between.
  EXPECT_NEAR(rig.block_ns(rig.attention(prompts(2, 4096)), true), rig.table_us(2, 4096) * 1e3, 1e-3);
}

TEST(DsaContextModule, AChunkAfterACachedPrefixCarriesTheMeasuredUtilisationOver) {
  Glm5PrefillOnB200 rig;
  // 8,192 new tokens after 8,192 cached, against none (B200 FP8 4.5 PFLOP/s; 8 heads, 4 index heads;
  // 36.6 M projection parameters): the projections' 600 GFLOP (133 us at peak) do not change; the
  // indexer's pairs grow from 33.6 M to 100.7 M (7.6 -> 22.9 us) and the attended ones from 14.7 M
  // (every query's keys up to the top-k of 2,048) to 16.8 M (56.8 -> 64.9 us): 197.5 -> 220.9 us of
  // compute, x1.118. (The prefill table's own row for that prefix, not imported, reads 2,976 us: x1.27.)
  const double fresh = rig.block_ns(rig.attention(prompts(1, 8192)), true);
  const double after_prefix = rig.block_ns(rig.attention(prompts(1, 8192, 8192)), true);
  EXPECT_NEAR(after_prefix / fresh, 1.118, 0.005);
}

}  // namespace
}  // namespace nvl::engine
