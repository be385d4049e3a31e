// DeepSeek-V3's decode attention, as the engine launches it, priced whole from the measured MLA decode
// module table of its kernel library: the same kernel list with and without the table, against hand
// estimates. GB200 under SGLang with attention DP (all 128 heads on the rank), FP8 GEMMs and KV: the DEP
// decode workers of the GB200 SGLang rows of the measured serving table.
#include <vector>

#include <gtest/gtest.h>

#include "fakegpu/mla_module.h"
#include "tests/engine/deepseek_mla_rig.h"

namespace nvl::engine {
namespace mla_decode_module_test {

// The rig, with one module table to use or not (the GEMM and MLA decode kernel tables' either way).
struct DeepSeekDecodeOnGb200 : test::DeepSeekMlaOnGb200 {
  double block_ns(const std::vector<hal::KernelDesc>& ks, bool module_table) const {
    fakegpu::MeasuredKernels used = tables;
    if (!module_table) used.mla_decode_module = nullptr;
    return DeepSeekMlaOnGb200::block_ns(ks, used, module_table);
  }
  double table_us(std::int64_t batch, std::int64_t length) const {
    return ModuleRig::table_us("mla_decode_module", batch, length);
  }
};

using test::decodes;

TEST(MlaDecodeModule, TheEnginesDecodeAttentionIsFoundWithItsShape) {
  DeepSeekDecodeOnGb200 rig;
  const auto block = fakegpu::find_mla_module(rig.attention(decodes(16, 1024)));
  ASSERT_TRUE(block.has_value());
  EXPECT_EQ(block->phase, fakegpu::ModulePhase::decode);
  EXPECT_EQ(block->gemm_dtype, hal::DType::fp8);
  EXPECT_EQ(block->kv_dtype, hal::DType::fp8);
  EXPECT_EQ(block->heads, 128);
  EXPECT_EQ(block->batch, 16);
  EXPECT_EQ(block->length, 1025);  // the cached tokens and the new one
  EXPECT_EQ(block->prefix, 0);
  // MTP: two queries a sequence count as twice the sequences.
  EXPECT_EQ(fakegpu::find_mla_module(rig.attention(decodes(16, 1024, 2)))->batch, 32);
  // Not a decode-only block: a prefill chunk beside the decodes.
  RankBatch mixed = decodes(16, 1024);
  mixed.prefills.push_back(PrefillSpan{0, 512, true});
  EXPECT_FALSE(fakegpu::find_mla_module(rig.attention(mixed)).has_value());
  // Not DeepSeek-V3's dense geometry: GLM-5's DSA decode.
  const ModelProfile glm = load_model_profile(model_profile_path("glm-5"));
  std::vector<hal::KernelDesc> glm_attention;
  LayerKernels{glm, 8, WeightDtypes{}, hal::DType::fp8}.attention(decodes(16, 1024), false, glm_attention);
  EXPECT_FALSE(fakegpu::find_mla_module(glm_attention).has_value());
}

TEST(MlaDecodeModule, TheBlockCostsWhatTheModuleTableSaysBelowItsKernelsSum) {
  DeepSeekDecodeOnGb200 rig;
  // 16 sequences at 1,024 cached tokens: the table's 90.3 us.
  const auto ks = rig.attention(decodes(16, 1024));
  const double with_module = rig.block_ns(ks, true);
  EXPECT_NEAR(with_module, rig.table_us(16, 1025) * 1e3, 1e-3);
  // Kernel by kernel, each from its own table (each timed on its own): at m 16 every projection is a weight
  // read, 1.9 us for the fused q_a/kv_a's 15.1 MB of FP8 at 8 TB/s, 4.7 us for q_b's 37.7 MB, 14.7 us for
  // o's 117.4 MB; SGLang's GEMM table puts them at about 20, 36 and 38 us (the per-token-group
  // quantisation and DeepGEMM's small-m tiles); the attention over 16 x 1,025 latent keys (9.4 MB) about
  // 19 us in the MLA decode table, the two absorbed BMMs about 3 us each: some 120 us. The module, replayed
  // from one CUDA graph, overlaps what the kernels' own timings serialise: about x0.75.
  const double kernel_by_kernel = rig.block_ns(ks, false);
  EXPECT_GT(kernel_by_kernel, 105e3);
  EXPECT_LT(kernel_by_kernel, 135e3);
  EXPECT_GT(with_module / kernel_by_kernel, 0.65);
  EXPECT_LT(with_module / kernel_by_kernel, 0.85);
  // MTP's second query per sequence reads as 32 sequences of the same length (1,026 keys, a key past the
  // row of 1,025, the next 1,024 keys away).
  const double mtp_row = rig.table_us(32, 1025) * 1e3;
  EXPECT_NEAR(rig.block_ns(rig.attention(decodes(16, 1024, 2)), true), mtp_row, 0.001 * mtp_row);
}

TEST(MlaDecodeModule, ABlockTheTableLacksStaysKernelByKernel) {
  DeepSeekDecodeOnGb200 rig;
  // SGLang's wide-EP rows hold FP8 KV only: a BF16 cache is priced kernel by kernel, table or not.
  LayerKernels bf16_cache{rig.model, 1, WeightDtypes{}, hal::DType::bf16};
  std::vector<hal::KernelDesc> ks;
  bf16_cache.attention(decodes(16, 1024), false, ks);
  fakegpu::MeasuredKernels without = rig.tables;
  without.mla_decode_module = nullptr;
  const std::vector<fakegpu::KernelCost> with_table = rig.costs(ks, rig.tables);
  const std::vector<fakegpu::KernelCost> without_table = rig.costs(ks, without);
  for (std::size_t i = 0; i < ks.size(); ++i) {
    EXPECT_EQ(fakegpu::price_ns(with_table[i], {}), fakegpu::price_ns(without_table[i], {})) << ks[i].name;
  }
}

TEST(MlaDecodeModule, BeyondTheMeasuredLengthsOnlyTheAttentionGrows) {
  DeepSeekDecodeOnGb200 rig;
  // 256 sequences at 8,192 cached tokens: SGLang's rows at batch 256 stop at kv_len 1,025 (190 us). The
  // block costs that plus what the attention kernel's own table adds for the 7,168 keys more a sequence:
  // 256 x 7,168 latent keys of 576 B, 1.06 GB, 132 us at GB200's 8 TB/s, more at the kernel's measured
  // bandwidth. (Holding the module's measured utilisation instead would multiply its whole 190 us, floor
  // included, by the roofline's growth, x4.1: some 785 us.)
  const auto ks = rig.attention(decodes(256, 8192));
  const double with_module = rig.block_ns(ks, true);
  const auto attention_ns = [&](std::int64_t context) {
    const auto list = rig.attention(decodes(256, context));
    fakegpu::CostModel pricing(rig.profile, 0);
    pricing.use_measured_kernels(rig.tables);
    for (const hal::KernelDesc& k : list) {
      if (k.kind == hal::KernelKind::attn_decode) return pricing.kernel_time(k).ns() - rig.profile.kernel_launch.ns();
    }
    ADD_FAILURE() << "no attention kernel";
    return std::int64_t{0};
  };
  const double grows = static_cast<double>(attention_ns(8192) - attention_ns(1024));
  EXPECT_GT(grows, 132e3);
  EXPECT_LT(grows, 300e3);
  EXPECT_NEAR(with_module, rig.table_us(256, 1025) * 1e3 + grows, 5);
}

TEST(MlaDecodeModule, BeyondTheTableTheLastMeasuredUtilisationCarriesOver) {
  DeepSeekDecodeOnGb200 rig;
  // 2,048 sequences at 256 cached tokens, twice the largest measured batch (1,024, 382.3 us at kv_len 257).
  // The roofline of the block: the 187 M projection parameters per query (15.1 M + 37.7 M + 16.8 M + 117.4
  // M) at 4.5 PFLOP/s FP8 are 83 ns a query; the latent attention's 128 heads x 1,088 multiply-adds per key
  // over 257 keys, 71.6 MFLOP, 16 ns; the weights (187 MB) and keys (2,048 x 257 x 576 B = 303 MB at 8
  // TB/s) sit below the compute. So the roofline is linear in the batch and doubling it doubles the
  // measured time: about 765 us.
  const double at_1024 = rig.table_us(1024, 257) * 1e3;
  EXPECT_NEAR(rig.block_ns(rig.attention(decodes(2048, 256)), true) / at_1024, 2.0, 0.02);
}

}  // namespace mla_decode_module_test
}  // namespace nvl::engine
