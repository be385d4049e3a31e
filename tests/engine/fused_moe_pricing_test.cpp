// GLM-5's routed experts, as the engine launches them, priced from the measured fused-MoE table of their
// kernel library: the same kernel with and without the table, against a hand estimate of each.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "engine/exec/layer_kernels.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/profile_library.h"

namespace nvl::engine {
namespace fused_moe_pricing_test {

// B200 under SGLang with GLM-5 FP8 at TP8 and no EP (every expert split 8 ways): the validate rows'
// deployment. At TP the engine prices 1/8 of the experts whole, the same FLOPs and weight bytes.
struct Glm5Tp8OnB200 {
  fakegpu::DeviceProfile profile = fakegpu::load_device_profile_named("b200");
  ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  LayerKernels kernels{model, 8, WeightDtypes{}, hal::DType::fp8};
  fakegpu::MeasuredKernels tables = fakegpu::MeasuredKernels::load(profile.measured_kernels.at("sglang"));

  // The routed experts of `tokens` whose pairs hit `experts_hit` experts, as StepGraphBuilder sets them
  // up at TP without EP; their time with or without the MoE table (the other tables in use either way).
  double experts_ns(std::int64_t tokens, std::int64_t experts_hit, bool moe_table,
                    hal::MoeFeed feed = hal::MoeFeed::routed_here) const {
    std::vector<hal::KernelDesc> ks;
    const hal::FusedMoeShape op = kernels.fused_moe(tokens, 8, 1, feed);
    kernels.routed_experts(tokens * 8 / 8, (experts_hit + 7) / 8, op, ks);
    fakegpu::CostModel pricing(profile, 0);
    fakegpu::MeasuredKernels used = tables;
    used.moe_deepep_low_latency = nullptr;
    if (!moe_table) used.moe = nullptr;
    pricing.use_measured_kernels(used);
    return fakegpu::price_ns(pricing.cost(ks.at(0), {}), {});
  }
  // The table's own row (microseconds): FP8, GLM-5's experts, MoE TP8.
  static double table_us(std::int64_t tokens) {
    std::ifstream in(fakegpu::default_profile_dir() / "measured/b200/moe_sglang.csv");
    const std::string key = "fp8,6144,2048,8,256,8,1," + std::to_string(tokens) + ",";
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size()));
    }
    ADD_FAILURE() << "no row " << key;
    return 0;
  }
};

TEST(FusedMoePricing, DecodesRoutedExpertsCostWhatTheMoeTableSays) {
  Glm5Tp8OnB200 rig;
  // 16 decode tokens choose 128 experts of 256 uniformly: about 256 x (1 - (255/256)^128) = 101 distinct,
  // 13 experts' worth on each GPU. The roofline reads their weights, 13 x 3 x 6144 x 2048 B = 491 MB of
  // FP8, at 80% of 8 TB/s: 77 us, and 1 us of fill. The measured op takes 119.4 us (routing, permute and
  // finalize included, the TP-split GEMMs 256 wide): x1.5.
  const double table = rig.experts_ns(16, 101, true);
  const double roofline = rig.experts_ns(16, 101, false);
  EXPECT_NEAR(table, Glm5Tp8OnB200::table_us(16) * 1e3, 1.0);
  EXPECT_NEAR(roofline, 78e3, 3e3);
  EXPECT_NEAR(table / roofline, 119.4 / 78, 0.08);
  // Dispatched by DeepEP: not what the fused table measured (its op routes every token itself), so the
  // roofline where no DeepEP table is in use.
  EXPECT_DOUBLE_EQ(rig.experts_ns(16, 101, true, hal::MoeFeed::deepep_low_latency), roofline);
}

TEST(FusedMoePricing, APrefillChunksRoutedExpertsCostWhatTheMoeTableSays) {
  Glm5Tp8OnB200 rig;
  // 8192 prefill tokens hit every expert. The roofline: 8192 x 8 / 8 = 8192 pairs x 6 x 6144 x 2048
  // FLOPs = 0.62 PFLOP at 78% of 4.5 PFLOP/s, 176 us, against the 32 experts' 1.21 GB and the pairs'
  // BF16 activations in and out (8192 x (2 x 6144 + 3 x 2048) x 2 B = 0.30 GB) at 6.4 TB/s, 236 us:
  // memory-bound, about 236 us. Measured: 1057 us, x4.5 (GEMMs 256 wide along the split intermediate
  // dimension run far below peak).
  const double table = rig.experts_ns(8192, 256, true);
  const double roofline = rig.experts_ns(8192, 256, false);
  EXPECT_NEAR(table, Glm5Tp8OnB200::table_us(8192) * 1e3, 1.0);
  EXPECT_NEAR(roofline, 236e3, 6e3);
  EXPECT_NEAR(table / roofline, 1057.0 / 236, 0.15);
}

TEST(FusedMoePricing, BeyondTheLargestMeasuredChunkTheOpsUtilisationIsHeld) {
  Glm5Tp8OnB200 rig;
  // 32768 tokens, twice the largest measured 16384 (2068 us). The op's roofline there is compute-bound:
  // 2 x 32768 x 8 x 3 x 6144 x 256 FLOPs = 2.47 PFLOP at 4.5 PFLOP/s = 550 us, against the weights'
  // 1.21 GB + 32768 x 6144 x 4 B = 0.81 GB of activations at 8 TB/s, 252 us; at 16384 the compute,
  // 275 us, against 1.21 + 0.40 GB, 202 us. So the time doubles: about 4136 us.
  EXPECT_NEAR(rig.experts_ns(32768, 256, true) / (Glm5Tp8OnB200::table_us(16384) * 1e3), 2.0, 0.02);
}

}  // namespace fused_moe_pricing_test
}  // namespace nvl::engine
