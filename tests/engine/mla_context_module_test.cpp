// DeepSeek-V3's prefill attention, as the engine launches it, priced whole from the measured MLA prefill
// module table of its kernel library: the same kernel list with and without the table, against hand
// estimates. GB200 under SGLang with attention DP (all 128 heads on the rank), FP8 GEMMs and KV: the DEP8
// prefill workers of the GB200 SGLang rows of the measured serving table.
#include <vector>

#include <gtest/gtest.h>

#include "fakegpu/mla_module.h"
#include "tests/engine/deepseek_mla_rig.h"

namespace nvl::engine {
namespace mla_context_module_test {

// The rig, with one module table to use or not (the GEMM and MLA decode kernel tables' either way).
struct DeepSeekPrefillOnGb200 : test::DeepSeekMlaOnGb200 {
  double block_ns(const std::vector<hal::KernelDesc>& ks, bool module_table) const {
    fakegpu::MeasuredKernels used = tables;
    if (!module_table) used.mla_context = nullptr;
    return DeepSeekMlaOnGb200::block_ns(ks, used, module_table);
  }
  double table_us(std::int64_t batch, std::int64_t length) const {
    return ModuleRig::table_us("mla_context", batch, length);
  }
};

using test::prompts;

TEST(MlaContextModule, TheEnginesPrefillAttentionIsFoundWithItsShape) {
  DeepSeekPrefillOnGb200 rig;
  const auto block = fakegpu::find_mla_module(rig.attention(prompts(2, 1024)));
  ASSERT_TRUE(block.has_value());
  EXPECT_EQ(block->gemm_dtype, hal::DType::fp8);
  EXPECT_EQ(block->kv_dtype, hal::DType::fp8);
  EXPECT_EQ(block->heads, 128);
  EXPECT_EQ(block->batch, 2);
  EXPECT_EQ(block->length, 1024);
  EXPECT_EQ(block->prefix, 0);
  EXPECT_EQ(fakegpu::find_mla_module(rig.attention(prompts(1, 1024, 8192)))->prefix, 8192);
  // Not a prefill-only block: a decode beside the chunk.
  RankBatch mixed = prompts(1, 1024);
  mixed.decodes.push_back(DecodeSpan{1024, 1});
  EXPECT_FALSE(fakegpu::find_mla_module(rig.attention(mixed)).has_value());
  // Not DeepSeek-V3's geometry: GLM-5's DSA prefill.
  const ModelProfile glm = load_model_profile(model_profile_path("glm-5"));
  std::vector<hal::KernelDesc> glm_attention;
  LayerKernels{glm, 8, WeightDtypes{}, hal::DType::fp8}.attention(prompts(1, 1024), false, glm_attention);
  EXPECT_FALSE(fakegpu::find_mla_module(glm_attention).has_value());
}

TEST(MlaContextModule, TheBlockCostsWhatTheModuleTableSaysFarAboveItsKernelsSum) {
  DeepSeekPrefillOnGb200 rig;
  // One 1,024-token prompt: the table's 872.5 us.
  const auto ks = rig.attention(prompts(1, 1024));
  const double with_module = rig.block_ns(ks, true);
  EXPECT_NEAR(with_module, rig.table_us(1, 1024) * 1e3, 1e-3);
  // Kernel by kernel: the projections' 187 M parameters per token (fused q_a/kv_a 15.1 M, q_b 37.7 M,
  // kv_b 16.8 M, o 117.4 M) are 383 GFLOP over 1,024 tokens, 85 us at the 4.5 PFLOP/s FP8 peak; SGLang's
  // GEMM table times o's own shape at m 1,024 at 110 us (half the peak), and the other three, not measured
  // at their (n, k), run at the utilisation of the nearest measured shapes, a quarter to a third of the
  // peak: some 135 us; the causal attention's 43 GFLOP (524,800 query-key pairs, 128 heads of 192 + 128)
  // about 30 us at the roofline's prefill efficiency: 250-300 us. The module, measured whole, sits on a
  // floor of about 0.85 ms up to 1,024 tokens (the host launching the block's operations in eager mode, on
  // Grace): about x3.
  const double kernel_by_kernel = rig.block_ns(ks, false);
  EXPECT_GT(kernel_by_kernel, 220e3);
  EXPECT_LT(kernel_by_kernel, 320e3);
  EXPECT_GT(with_module / kernel_by_kernel, 2.7);
  EXPECT_LT(with_module / kernel_by_kernel, 4.0);
  // Two prompts of 1,024: the table's own row.
  EXPECT_NEAR(rig.block_ns(rig.attention(prompts(2, 1024)), true), rig.table_us(2, 1024) * 1e3,
              1e-3);
}

TEST(MlaContextModule, AChunkAfterACachedPrefixCarriesTheMeasuredUtilisationOver) {
  DeepSeekPrefillOnGb200 rig;
  // 1,024 new tokens after 8,192 cached, against none (GB200: 4.5 PFLOP/s FP8, 2.25 BF16): the per-token
  // projections (170.3 M parameters) stay at 348.8 GFLOP; kv_b expands 9,216 keys instead of 1,024 (34.4
  // -> 309.2 GFLOP); the attended pairs grow from 524,800 to 8,913,408 (43.0 -> 730.2 GFLOP BF16). The
  // roofline's compute goes from 85.2 + 19.1 = 104.3 us to 146.2 + 324.5 = 470.8 us, and its memory side
  // (the FP8 weights and 1,024 or 9,216 keys expanded in BF16: 0.27 and 0.94 GB) stays below: x4.515.
  const double fresh = rig.block_ns(rig.attention(prompts(1, 1024)), true);
  const double after_prefix = rig.block_ns(rig.attention(prompts(1, 1024, 8192)), true);
  EXPECT_NEAR(after_prefix / fresh, 4.515, 0.005);
}

}  // namespace mla_context_module_test
}  // namespace nvl::engine
