// GLM-5's decode attention, as the engine launches it, priced whole from the measured DSA module table
// of its kernel library: the same kernel list with and without the table, against a hand estimate.
#include <gtest/gtest.h>

#include "fakegpu/dsa_module.h"
#include "tests/engine/attention_block.h"
#include "tests/engine/glm5_dsa_rig.h"

namespace nvl::engine {
namespace dsa_decode_module_test {

using fakegpu::KernelCost;

// The rig, with the decode table's rows and the whole list's time (input norm included).
struct Glm5OnB200 : test::Glm5DsaOnB200 {
  double list_ns(const std::vector<hal::KernelDesc>& ks, bool module_table,
                 std::vector<KernelCost>* costs_out = nullptr) const {
    const std::vector<KernelCost> out = costs(ks, module_table);
    double ns = 0;
    for (const KernelCost& c : out) ns += fakegpu::price_ns(c, {});
    if (costs_out != nullptr) *costs_out = out;
    return ns;
  }
  double table_us(std::int64_t batch, std::int64_t kv_len) const {
    return ModuleRig::table_us("dsa_decode", batch, kv_len);
  }
};

using test::decodes;

TEST(DsaDecodeModule, TheEnginesDecodeAttentionIsFoundWithItsShape) {
  Glm5OnB200 rig;
  const auto block = fakegpu::find_dsa_module(rig.attention(decodes(32, 1024)));
  ASSERT_TRUE(block.has_value());
  EXPECT_EQ(block->gemm_dtype, hal::DType::fp8);
  EXPECT_EQ(block->kv_dtype, hal::DType::fp8);
  EXPECT_EQ(block->heads, 8);
  EXPECT_EQ(block->batch, 32);
  EXPECT_EQ(block->length, 1025);  // the cached tokens and the new one, as the table's step + 1
  // MTP: two queries a sequence count as twice the sequences.
  EXPECT_EQ(fakegpu::find_dsa_module(rig.attention(decodes(32, 1024, 2)))->batch, 64);
  // Not a decode-only GLM-5 block: a prefill chunk beside the decodes; DeepSeek-V3's dense MLA.
  RankBatch mixed = decodes(32, 1024);
  mixed.prefills.push_back(PrefillSpan{0, 512, true});
  EXPECT_FALSE(fakegpu::find_dsa_module(rig.attention(mixed)).has_value());
  const ModelProfile v3 = load_model_profile(model_profile_path("deepseek-v3"));
  std::vector<hal::KernelDesc> dense;
  LayerKernels(v3, 8, WeightDtypes{}, hal::DType::fp8).attention(decodes(32, 1024), false, dense);
  EXPECT_FALSE(fakegpu::find_dsa_module(dense).has_value());
}

TEST(DsaDecodeModule, TheBlockCostsWhatTheModuleTableSays) {
  Glm5OnB200 rig;
  const auto ks = rig.attention(decodes(32, 1024));
  std::vector<KernelCost> costs;
  const double with_module = rig.list_ns(ks, true, &costs);
  // The input norm stays on the roofline; every other kernel is the module's, together its measured time.
  double norm = 0;
  for (std::size_t i = 0; i < ks.size(); ++i) {
    if (ks[i].kind == hal::KernelKind::elementwise) {
      norm += fakegpu::price_ns(costs[i], {});
      EXPECT_FALSE(costs[i].measured) << ks[i].name;
    } else {
      EXPECT_TRUE(costs[i].measured) << ks[i].name;
    }
  }
  EXPECT_NEAR(with_module - norm, rig.table_us(32, 1025) * 1e3, 1e-3);

  // Kernel by kernel, the five projection GEMMs come from SGLang's GEMM table, whose FP8 rows on B200 do
  // not fall below about 14 us even where HBM would take 0.5 us (m 32: fused q_a/kv_a 2624 x 6144 is
  // 20.6 us, q_b 2048 x 2048 14.2, the indexer's q 512 x 2048 about 13 and k 128 x 6144 16.2, o
  // 6144 x 2048 about 20: some 84 us), and the absorbed BMMs, the indexer's scoring of 32 x 1025 keys and
  // the sparse attention come from the roofline, 2-4 us each with their graph nodes: some 99 us in all.
  // The module, measured whole under the same library, takes 78.8 us: x0.80.
  const double kernel_by_kernel = rig.list_ns(ks, false) - norm;
  EXPECT_GT(kernel_by_kernel, 90e3);
  EXPECT_LT(kernel_by_kernel, 105e3);
  EXPECT_NEAR((with_module - norm) / kernel_by_kernel, 78.8 / 99, 0.04);

  // A prefill chunk beside the decodes: kernel by kernel, module table or not.
  RankBatch mixed = decodes(32, 1024);
  mixed.prefills.push_back(PrefillSpan{0, 512, true});
  const auto mixed_ks = rig.attention(mixed);
  EXPECT_DOUBLE_EQ(rig.list_ns(mixed_ks, true), rig.list_ns(mixed_ks, false));
}

TEST(DsaDecodeModule, BeyondTheLongestMeasuredContextTheModulesUtilisationIsHeld) {
  Glm5OnB200 rig;
  // Batch 128's longest measured context is 2049 keys (128.2 us). At 8193 the module's roofline (B200:
  // 8 TB/s, 4.5 PFLOP/s FP8) grows from the projections' 37 MB of FP8 weights (fused q_a/kv_a 16.1 M,
  // q_b 4.2 M, the indexer's q 1.0 M and k 0.8 M, absorbed 1.8 M, o 12.6 M) plus the index keys read
  // (128 x 2049 x 132 B = 35 MB) and the top-k latent keys (128 x 2048 x 576 B = 151 MB), 223 MB, to
  // 37 + 138 + 151 = 326 MB: x1.46, memory-bound both (the FLOPs take some 3 us), so about 188 us.
  const auto ks = rig.attention(decodes(128, 8192));
  std::vector<KernelCost> costs;
  const double ns = rig.list_ns(ks, true, &costs);
  double norm = 0;
  for (std::size_t i = 0; i < ks.size(); ++i) {
    if (ks[i].kind == hal::KernelKind::elementwise) norm += fakegpu::price_ns(costs[i], {});
  }
  EXPECT_NEAR((ns - norm) / (rig.table_us(128, 2049) * 1e3), 1.46, 0.05);
}

}  // namespace dsa_decode_module_test
}  // namespace nvl::engine
