// Two-batch overlap: how a batch is cut into micro-batches, and what overlapping one's all-to-all
// with the other's compute buys a comm-bound prefill step on two emulated H100 nodes over IB.
#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/exec/two_batch_split.h"
#include "engine/worker/normal_worker_group.h"

namespace nvl::engine {
namespace {

TEST(TwoBatchSplit, CutsAPrefillChunkInTheMiddleAndOnlyTheSecondPartSamples) {
  RankBatch b;
  b.prefills.push_back(PrefillSpan{100, 1'000, true});
  const auto [first, second] = split_two_batches(b);
  ASSERT_EQ(first.prefills.size(), 1u);
  ASSERT_EQ(second.prefills.size(), 1u);
  EXPECT_EQ(first.prefills[0].prior_tokens, 100);
  EXPECT_EQ(first.prefills[0].new_tokens, 500);
  EXPECT_FALSE(first.prefills[0].samples);
  EXPECT_EQ(second.prefills[0].prior_tokens, 600);  // attends to the first half as cached context
  EXPECT_EQ(second.prefills[0].new_tokens, 500);
  EXPECT_TRUE(second.prefills[0].samples);
}

TEST(TwoBatchSplit, KeepsWholeRequestsWhereTheyFitAndDecodesWhole) {
  RankBatch b;
  b.prefills = {PrefillSpan{0, 300, true}, PrefillSpan{0, 300, true}, PrefillSpan{0, 401, true}};
  b.decodes = {DecodeSpan{50, 1}, DecodeSpan{60, 1}};
  // 1,003 tokens: the first micro-batch takes 502 (300 + 202 of the second prompt), the rest go second.
  const auto [first, second] = split_two_batches(b);
  EXPECT_EQ(first.tokens(), 502);
  EXPECT_EQ(second.tokens(), 501);
  EXPECT_EQ(first.tokens() + second.tokens(), b.tokens());
  EXPECT_EQ(first.sampled_tokens() + second.sampled_tokens(), b.sampled_tokens());
  EXPECT_EQ(first.decodes.size() + second.decodes.size(), 2u);
}

TEST(TwoBatchSplit, ASingleDecodeTokenLeavesTheSecondEmpty) {
  RankBatch b;
  b.decodes = {DecodeSpan{10, 1}};
  const auto [first, second] = split_two_batches(b);
  EXPECT_EQ(first.tokens(), 1);
  EXPECT_TRUE(second.empty());
}

// Time until every rank's 4K-token prompts have their first token, DeepSeek-V3 over 16 H100s (2 nodes, IB).
double prefill_seconds(bool tbo, emu::FabricMode mode = emu::FabricMode::fast) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "h100", "hgx-h100", 16, 2, mode);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  NormalGroupConfig cfg;
  cfg.kv_dtype = hal::DType::bf16;
  cfg.scheduler.token_budget = 8'192;
  cfg.scheduler.chunk_tokens = 8'192;
  cfg.two_batch_overlap = tbo;
  rt::Time last;
  int done = 0;
  NormalWorkerGroup group(
      rt, model, cluster.devices(0, 16), cluster.collectives(), cfg,
      [&](std::int32_t, const StepOutcome& o) {
        if (o.finished) ++done;
        last = rt.now();
      },
      [](std::int32_t, RequestId id, const std::string& why) { ADD_FAILURE() << "rejected " << id << ": " << why; });
  group.start();
  RequestId id = 1;
  for (std::int32_t r = 0; r < 16; ++r) {
    for (int k = 0; k < 2; ++k) {
      RequestState q;
      q.id = id++;
      q.prompt_tokens = 4'096;
      q.max_output_tokens = 1;
      group.submit(r, std::move(q));
    }
  }
  rt.run();
  EXPECT_EQ(done, 32);
  EXPECT_EQ(group.steps(), 1u);
  return last.since_start().seconds();
}

TEST(TwoBatchOverlap, OnACommBoundPrefillStepTheFastModeFindsWhatTheExactModeFinds) {
  const double plain = prefill_seconds(false);
  const double tbo = prefill_seconds(true);
  const double exact_plain = prefill_seconds(false, emu::FabricMode::exact);
  const double exact_tbo = prefill_seconds(true, emu::FabricMode::exact);
  // Overlap can at best hide the shorter of compute and communication: the step cannot drop below half.
  // Over IB this step is so communication-bound that the two micro-batches' all-to-alls, sharing the
  // NICs, take about what one batch's did: the exact mode finds no gain (1.444 vs 1.441 s). The fast
  // mode, whose fast-forwarded layers once slept without holding the NICs, showed a 5% gain; holding
  // them, it agrees with the exact mode.
  EXPECT_GT(tbo, 0.5 * plain);
  EXPECT_LT(tbo, 1.01 * plain);
  EXPECT_NEAR(plain, exact_plain, 0.03 * exact_plain);
  EXPECT_NEAR(tbo, exact_tbo, 0.03 * exact_tbo);
}

TEST(TwoBatchOverlap, NeedsExpertParallelism) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 1);
  const ModelProfile model = load_model_profile(model_profile_path("glm-4.5"));
  NormalGroupConfig cfg;
  cfg.two_batch_overlap = true;
  EXPECT_THROW(NormalWorkerGroup(rt, model, cluster.devices(0, 1), cluster.collectives(), cfg,
                                 [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace nvl::engine
