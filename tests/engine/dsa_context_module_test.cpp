// GLM-5's prefill attention, as the engine launches it, priced whole from the measured DSA prefill module
// table of its kernel library: the same kernel list with and without the table, against hand estimates.
#include <gtest/gtest.h>

#include "fakegpu/dsa_module.h"
#include "tests/engine/attention_block.h"
#include "tests/engine/glm5_dsa_rig.h"

namespace nvl::engine {
namespace dsa_context_module_test {

// The rig, with the prefill table's rows and the block's time (no module includes the input norm).
struct Glm5PrefillOnB200 : test::Glm5DsaOnB200 {
  double block_ns(const std::vector<hal::KernelDesc>& ks, bool module_table) const {
    return test::block_ns(ks, costs(ks, module_table), module_table);
  }
  double table_us(std::int64_t batch, std::int64_t isl) const {
    return ModuleRig::table_us("dsa_context", batch, isl);
  }
};

using test::prompts;

TEST(DsaContextModule, TheEnginesPrefillAttentionIsFoundWithItsShape) {
  Glm5PrefillOnB200 rig;
  const auto block = fakegpu::find_dsa_module(rig.attention(prompts(2, 4096)));
  ASSERT_TRUE(block.has_value());
  EXPECT_EQ(block->phase, fakegpu::ModulePhase::context);
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

}  // namespace dsa_context_module_test
}  // namespace nvl::engine
