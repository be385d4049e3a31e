// Single-batch overlap: the combine runs beside the routed experts' down GEMM and the shared expert
// (on the SMs its send kernels leave them), as SGLang runs it on Blackwell.
#include <string>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/worker/normal_worker_group.h"
#include "full_batch_decode.h"

namespace nvl::engine {
namespace single_batch_overlap_test {

// Mean decode step of DeepSeek-V3 over 16 GPUs of a GB300 NVL72 rack, EP16, 64 requests per GPU of 500
// tokens.
double decode_step_ms(bool sbo, emu::FabricMode mode) {
  return test::decode_steps(test::FullBatchDecode{.gpu = "gb300",
                                                  .fabric = "gb300-nvl72",
                                                  .units = 1,
                                                  .mode = mode,
                                                  .configure = [sbo](NormalGroupConfig& c) {
                                                    c.single_batch_overlap = sbo;
                                                  }})
      .step_ms;
}

TEST(SingleBatchOverlap, TheCombineHidesBehindTheDownGemmAndTheFastModeFindsWhatTheExactModeFinds) {
  const double plain = decode_step_ms(false, emu::FabricMode::fast);
  const double sbo = decode_step_ms(true, emu::FabricMode::fast);
  const double exact_plain = decode_step_ms(false, emu::FabricMode::exact);
  const double exact_sbo = decode_step_ms(true, emu::FabricMode::exact);
  EXPECT_NEAR(plain, exact_plain, 0.03 * exact_plain);
  EXPECT_NEAR(sbo, exact_sbo, 0.03 * exact_sbo);
  // Hand estimate. Each MoE layer's combine (gb300-nvl72.json's a2a_combine) takes its 18.5 us launch,
  // 15 peers x 50 ns, and its 11 us sync, within which its data drains (64 tokens x 8 experts x 14 KB in
  // BF16, 15/16 of it over NVLink at 0.74 x 900 GB/s: 10.3 us), plus a 0.25 us hop: ~30.5 us. Beside it
  // the down GEMM reads its 16 experts' down weights in FP8 (16 x 7,168 x 2,048 B = 235 MB) and the shared
  // expert its 44 MB: ~44 us at 80% of 8 TB/s, memory-bound, so the 32 SMs the combine takes do not slow
  // it. The combine hides whole: SBO saves ~58 x 30.5 us = 1.77 ms a step, less the cost of running the
  // experts as two grouped GEMMs (a graph node and a fill more a layer, ~2 us).
  const double combine_ms = 58 * (18.5 + 15 * 0.05 + 11 + 0.25) * 1e-3;
  const double saved = plain - sbo;
  EXPECT_GT(saved, 0.8 * combine_ms);
  EXPECT_LT(saved, 1.05 * combine_ms);
}

TEST(SingleBatchOverlap, NeedsExpertParallelismAndExcludesTwoBatchOverlapAndLeavesTheGemmSms) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 2);
  const ModelProfile model = load_model_profile(model_profile_path("glm-4.5"));
  const auto make = [&](int gpus, auto configure) {
    NormalGroupConfig cfg;
    cfg.single_batch_overlap = true;
    configure(cfg);
    NormalWorkerGroup(rt, model, cluster.devices(0, gpus), cluster.collectives(), cfg,
                      [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {});
  };
  EXPECT_THROW(make(1, [](NormalGroupConfig&) {}), std::invalid_argument);
  EXPECT_THROW(make(2, [](NormalGroupConfig& c) { c.two_batch_overlap = true; }), std::invalid_argument);
  EXPECT_THROW(make(2, [](NormalGroupConfig& c) { c.sbo_combine_sms = 160; }), std::invalid_argument);
  EXPECT_THROW(make(2, [](NormalGroupConfig& c) { c.sbo_combine_sms = 0; }), std::invalid_argument);
  EXPECT_NO_THROW(make(2, [](NormalGroupConfig& c) { c.sbo_combine_sms = 3; }));
}

}  // namespace single_batch_overlap_test
}  // namespace nvl::engine
