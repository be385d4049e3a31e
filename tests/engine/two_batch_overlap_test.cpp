// Two-batch overlap: how a batch is cut into micro-batches, and what overlapping one's all-to-all
// with the other's compute buys (or costs) prefill and decode steps on two emulated H100 nodes over IB.
#include <algorithm>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/exec/two_batch_split.h"
#include "engine/model/weight_footprint.h"
#include "engine/worker/normal_worker_group.h"
#include "full_batch_decode.h"

namespace nvl::engine {
namespace two_batch_overlap_test {

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
  // Hand estimate: per MoE layer each GPU sends 8,192 tokens x 8 experts x 7 KB in FP8 and takes them
  // back in BF16, half of it over IB at 90% of 50 GB/s: 15.6 ms a layer, 0.906 s over 58 layers. The
  // step is communication-bound (the rest of the plain step, ~0.5 s, is compute), so overlap hides the
  // compute but for the micro-batches' first and last stages, and cannot go below the all-to-alls.
  // (While the two micro-batches shared the SMs, each computing at half speed beside the other, both
  // waited for their all-to-alls together and the exact mode found no gain: 1.449 s both ways.)
  const double comm = 58 * (8'192.0 * 8 * 7'168 * 3 / 2) / (0.9025 * 50e9);
  const double compute = plain - comm;
  EXPECT_GT(tbo, 0.98 * comm);
  EXPECT_LT(tbo, plain - 0.8 * std::min(compute, comm));
  EXPECT_NEAR(plain, exact_plain, 0.03 * exact_plain);
  EXPECT_NEAR(tbo, exact_tbo, 0.03 * exact_tbo);
}

// Mean decode step of DeepSeek-V3 over `gpus` H100s (8 per node, IB between nodes), EP over all of them.
test::DecodeSteps decode_steps(bool tbo, int gpus, std::int64_t batch, std::int64_t prompt, emu::FabricMode mode) {
  return test::decode_steps(test::FullBatchDecode{.gpus = gpus,
                                                  .units = gpus / 8,
                                                  .batch = batch,
                                                  .prompt = prompt,
                                                  .mode = mode,
                                                  .configure = [tbo](NormalGroupConfig& c) { c.two_batch_overlap = tbo; }});
}

TEST(TwoBatchOverlap, DecodeStepsOverlapAndTheFastModeFindsWhatTheExactModeFinds) {
  // EP16 over two nodes, 64 requests per GPU of 500 tokens (a batch whose KV fits beside 16 experts a GPU).
  const test::DecodeSteps plain = decode_steps(false, 16, 64, 500, emu::FabricMode::fast);
  const test::DecodeSteps tbo = decode_steps(true, 16, 64, 500, emu::FabricMode::fast);
  const test::DecodeSteps exact_plain = decode_steps(false, 16, 64, 500, emu::FabricMode::exact);
  const test::DecodeSteps exact_tbo = decode_steps(true, 16, 64, 500, emu::FabricMode::exact);
  EXPECT_NEAR(plain.step_ms, exact_plain.step_ms, 0.03 * exact_plain.step_ms);
  EXPECT_NEAR(tbo.step_ms, exact_tbo.step_ms, 0.03 * exact_tbo.step_ms);
  // Hand estimate: a decode step is memory-bound, and each micro-batch's kernels read the weights they
  // use again (every projection, all 16 local experts, the LM head; not the embedding table, of which a
  // step gathers a few rows), at 80% of 3.35 TB/s. What overlap hides is the all-to-alls: per MoE layer
  // each GPU sends 64 tokens x 8 experts x 7 KB in FP8 and takes them back in BF16, half of it over IB at
  // 90% of 50 GB/s (0.12 ms), after a 31 us launch each way (the DeepEP low-latency fit): 10.7 ms over 58
  // layers. Each micro-batch's share is shorter than the other's compute beside it (~0.3 ms a layer), so
  // nearly all of it hides: TBO adds the re-read less ~10.7 ms. (While the two micro-batches shared the
  // SMs, computing side by side and then both waiting for their all-to-alls, it added the whole re-read.)
  const WeightFootprint& w = plain.weights;
  const double reread_ms = static_cast<double>(w.total_bytes() - w.embedding_bytes / 2) / (0.8 * 3.35e12) * 1e3;
  const double comm_ms = 58 * (2 * 31e-6 + 64.0 * 8 * 7'168 * 3 / 2 / (0.9025 * 50e9)) * 1e3;
  const double added_ms = tbo.step_ms - plain.step_ms;
  EXPECT_GT(added_ms, reread_ms - 1.2 * comm_ms);
  EXPECT_LT(added_ms, reread_ms - 0.8 * comm_ms);
}

TEST(TwoBatchOverlap, ADecodeStepWithARankOfOneRequestRunsAsOneBatch) {
  // Each micro-batch needs a request on every rank that decodes (their all-to-alls pair up), so with
  // one request per GPU the ranks run their steps whole, and do not read the weights twice: within the
  // spread of the sampled expert routing (whose draws the overlapped prefill step moves) of the steps
  // without overlap. With two, each micro-batch reads the attention, shared-expert and dense weights
  // again (~15 GB in FP8) and the experts its one token per GPU chose: 2 x 6.3 of each GPU's 16 (41 GB)
  // against the 10.1 that two tokens per GPU choose (128 and 256 picks of 256 experts): ~62 GB read a
  // step against ~41 GB, 1.5 x on the memory-bound part of a step. Overlap hides the all-to-alls (2 x
  // 31 us launches a MoE layer, ~3.6 ms of a ~25 ms step): 1.5 x 21.4 / 25 = ~1.28 x the step.
  const double one = decode_steps(false, 16, 1, 2'000, emu::FabricMode::fast).step_ms;
  EXPECT_LT(decode_steps(true, 16, 1, 2'000, emu::FabricMode::fast).step_ms, 1.1 * one);
  const double two = decode_steps(false, 16, 2, 2'000, emu::FabricMode::fast).step_ms;
  EXPECT_GT(decode_steps(true, 16, 2, 2'000, emu::FabricMode::fast).step_ms, 1.2 * two);
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

}  // namespace two_batch_overlap_test
}  // namespace nvl::engine
