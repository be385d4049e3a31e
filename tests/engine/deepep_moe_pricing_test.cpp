// DeepSeek-V3's routed experts behind DeepEP's dispatch, as the engine launches them on a DEP32 rank,
// priced from SGLang's measured wide-EP tables on GB200: low-latency mode for decode batches, normal mode
// for batches with prefill tokens; the same kernel with and without the tables, against hand estimates.
#include <cmath>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "engine/exec/layer_kernels.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/profile_library.h"

namespace nvl::engine {
namespace deepep_moe_pricing_test {

constexpr std::int64_t kEp = 32;

struct DeepSeekDep32OnGb200 {
  fakegpu::DeviceProfile profile = fakegpu::load_device_profile_named("gb200");
  ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  LayerKernels kernels{model, 1, WeightDtypes{}, hal::DType::fp8};
  fakegpu::MeasuredKernels tables = fakegpu::MeasuredKernels::load(profile.measured_kernels.at("sglang"));

  // The experts of one rank computing `pairs` token-expert pairs over its 8 experts, dispatched as `feed`
  // says (the op's tokens: pairs x EP / top-k, as StepGraphBuilder names them); with or without the
  // DeepEP tables (the other tables in use either way).
  double experts_ns(std::int64_t pairs, hal::MoeFeed feed, bool deepep_tables) const {
    std::vector<hal::KernelDesc> ks;
    kernels.routed_experts(pairs, 8, kernels.fused_moe(pairs * kEp / 8, 1, kEp, feed), ks);
    fakegpu::CostModel pricing(profile, 0);
    fakegpu::MeasuredKernels used = tables;
    if (!deepep_tables) used.moe_deepep_low_latency = used.moe_deepep_normal = nullptr;
    pricing.use_measured_kernels(used);
    return fakegpu::price_ns(pricing.cost(ks.at(0), {}), {});
  }
  // A table's own row (microseconds): FP8, DeepSeek-V3's experts, EP32, the group's `tokens`.
  static double table_us(const std::string& mode, std::int64_t tokens) {
    std::ifstream in(fakegpu::default_profile_dir() / ("measured/gb200/moe_deepep_" + mode + "_sglang.csv"));
    const std::string key = "fp8,7168,2048,8,256,1,32," + std::to_string(tokens) + ",";
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size()));
    }
    ADD_FAILURE() << "no row " << key;
    return 0;
  }
};

TEST(DeepEpMoePricing, ADecodeBatchsExpertsCostWhatTheLowLatencyTableSays) {
  DeepSeekDep32OnGb200 rig;
  // 64 decode tokens on each of 32 ranks, 2048 in the group, 8 pairs each: 512 pairs on this rank over
  // its 8 experts. The roofline reads their weights, 8 x 3 x 7168 x 2048 B = 352 MB of FP8, and the
  // pairs' BF16 activations, 512 x (2 x 7168 + 3 x 2048) x 2 B = 21 MB, at 80% of 8 TB/s: 58 us, and
  // 1 us of fill; its 45 GFLOP take 13 us. Measured behind DeepEP's low-latency dispatch: 85.0 us (the
  // masked grouped GEMM over every local expert), x1.4.
  const double table = rig.experts_ns(512, hal::MoeFeed::deepep_low_latency, true);
  const double roofline = rig.experts_ns(512, hal::MoeFeed::deepep_low_latency, false);
  EXPECT_NEAR(table, DeepSeekDep32OnGb200::table_us("ll", 2048) * 1e3, 1.0);
  EXPECT_NEAR(roofline, 59.5e3, 1.5e3);
  EXPECT_NEAR(table / roofline, 85.0 / 59.5, 0.05);
  // A rank the routing loads half as much again (768 pairs) reads as the op of 3072 tokens, halfway
  // between the measured 2048 and 4096.
  EXPECT_NEAR(rig.experts_ns(768, hal::MoeFeed::deepep_low_latency, true),
              (DeepSeekDep32OnGb200::table_us("ll", 2048) + DeepSeekDep32OnGb200::table_us("ll", 4096)) / 2 * 1e3,
              1.0);
}

TEST(DeepEpMoePricing, ABatchWithPrefillTokensCostsWhatTheNormalModeTableSays) {
  DeepSeekDep32OnGb200 rig;
  // The same 512 pairs in a step that also prefills: DeepEP's normal dispatch, whose expert compute
  // measures 502 us at 2048 tokens (about 500 us flat up to 16K tokens: a floor of its own, not FLOPs),
  // x8.4 the roofline's 59.5 us.
  const double table = rig.experts_ns(512, hal::MoeFeed::deepep_normal, true);
  EXPECT_NEAR(table, DeepSeekDep32OnGb200::table_us("normal", 2048) * 1e3, 1.0);
  EXPECT_NEAR(table / rig.experts_ns(512, hal::MoeFeed::deepep_normal, false), 501.75 / 59.5, 0.3);
  // 16K prefill tokens on every rank, 524288 in the group, 131072 pairs here: the largest measured op,
  // 8,056 us. Twice that lies beyond the table, where its utilisation is held: the roofline is
  // compute-bound there (6 x 262144 x 7168 x 2048 = 23 TFLOP at 78% of 4.5 PFLOP/s, 6.6 ms, against
  // 0.35 GB of weights and 10.8 GB of activations at 6.4 TB/s, 1.7 ms), so the time doubles.
  EXPECT_NEAR(rig.experts_ns(131072, hal::MoeFeed::deepep_normal, true),
              DeepSeekDep32OnGb200::table_us("normal", 524288) * 1e3, 1.0);
  EXPECT_NEAR(rig.experts_ns(262144, hal::MoeFeed::deepep_normal, true) /
                  (DeepSeekDep32OnGb200::table_us("normal", 524288) * 1e3),
              2.0, 0.03);
}

TEST(DeepEpMoePricing, ShapesTheTablesDoNotHoldStayOnTheRoofline) {
  DeepSeekDep32OnGb200 rig;
  // NVFP4 experts: the SGLang wide-EP tables hold FP8 only.
  const LayerKernels fp4{rig.model, 1, weight_dtypes_from_name("nvfp4"), hal::DType::fp8};
  std::vector<hal::KernelDesc> ks;
  fp4.routed_experts(512, 8, fp4.fused_moe(2048, 1, kEp, hal::MoeFeed::deepep_low_latency), ks);
  fakegpu::CostModel with(rig.profile, 0);
  with.use_measured_kernels(rig.tables);
  EXPECT_FALSE(with.cost(ks.at(0), {}).measured);
  // EP512: beyond the measured EP sizes (2, 4, 16, 32, 64, 128, 256).
  ks.clear();
  rig.kernels.routed_experts(16, 1, rig.kernels.fused_moe(1024, 1, 512, hal::MoeFeed::deepep_low_latency), ks);
  EXPECT_FALSE(with.cost(ks.at(0), {}).measured);
}

TEST(DeepEpMoePricing, AnEpSizeTheTablesSkipIsReadBetweenItsNeighbours) {
  DeepSeekDep32OnGb200 rig;
  // EP8 (a DEP8 worker), not measured: 256 decode tokens in the group, 256 pairs on a rank's 32 experts,
  // read at the same 256 tokens from EP4 (488.5 us with 64 experts) and EP16 (the nearest measured above),
  // log-linearly in EP: the geometric mean of the two.
  std::vector<hal::KernelDesc> ks;
  rig.kernels.routed_experts(256, 32, rig.kernels.fused_moe(256, 1, 8, hal::MoeFeed::deepep_low_latency), ks);
  fakegpu::CostModel pricing(rig.profile, 0);
  pricing.use_measured_kernels(rig.tables);
  const auto row = [](const std::string& ep) {
    std::ifstream in(fakegpu::default_profile_dir() / "measured/gb200/moe_deepep_ll_sglang.csv");
    const std::string key = "fp8,7168,2048,8,256,1," + ep + ",256,";
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size()));
    }
    ADD_FAILURE() << "no row " << key;
    return 0.0;
  };
  EXPECT_NEAR(row("4"), 487.0, 1.0);
  EXPECT_NEAR(fakegpu::price_ns(pricing.cost(ks.at(0), {}), {}), std::sqrt(row("4") * row("16")) * 1e3, 1.0);
}

}  // namespace deepep_moe_pricing_test
}  // namespace nvl::engine
