// EP over the TP group without all-to-alls (moe_all_to_all false): every GPU runs its experts on the
// tokens the attention all-reduce left it and the MoE all-reduce sums the outputs, as TensorRT-LLM and
// vLLM run EP without attention DP; the dispatch and combine, and their time, are gone.
#include <gtest/gtest.h>

#include "full_batch_decode.h"

namespace nvl::engine {
namespace ep_without_all_to_all_test {

// Mean decode step of DeepSeek-V3 on 8 GPUs of a GB300 NVL72 rack, attention TP8 with EP8, 64 requests of
// 500 tokens.
double decode_step_ms(bool all_to_all, emu::FabricMode mode) {
  return test::decode_steps(test::FullBatchDecode{.gpu = "gb300",
                                                  .fabric = "gb300-nvl72",
                                                  .gpus = 8,
                                                  .units = 1,
                                                  .mode = mode,
                                                  .configure = [all_to_all](NormalGroupConfig& c) {
                                                    c.attention_tp = 8;
                                                    c.moe_all_to_all = all_to_all;
                                                  }})
      .step_ms;
}

TEST(EpWithoutAllToAll, TheDispatchAndCombineTimeIsGoneOnBothFabricPaths) {
  const double with = decode_step_ms(true, emu::FabricMode::fast);
  const double without = decode_step_ms(false, emu::FabricMode::fast);
  EXPECT_NEAR(without, decode_step_ms(false, emu::FabricMode::exact), 0.03 * without);
  // Hand estimate from gb300-nvl72.json: a dispatch is its 9 us launch, 7 peers x 190 ns and its 7.5 us
  // sync; a combine 18.5 us, 7 x 50 ns and 11 us; a 0.25 us hop each. Their data (8 tokens a GPU, 8
  // experts, 7.2 KB in FP8 or 14.3 KB in BF16 a pair: under 1 MB) drains within the sync over NVLink.
  // ~48.6 us a MoE layer, 58 layers: ~2.8 ms a step. The experts' work is the same either way (a GPU's
  // slice would have received the pairs its experts now take from the replicated tokens).
  const double a2a_ms = 58 * (9 + 7 * 0.19 + 7.5 + 18.5 + 7 * 0.05 + 11 + 2 * 0.25) * 1e-3;
  EXPECT_GT(with - without, 0.85 * a2a_ms);
  EXPECT_LT(with - without, 1.1 * a2a_ms);
}

}  // namespace ep_without_all_to_all_test
}  // namespace nvl::engine
